import { QUIET_ZONE, type QrMatrix } from './qr-matrix.js';

// Each character covers two module rows: upper and lower half. Dark modules are drawn, so the
// block reads dark-on-light in a page's <pre> (docs/signing.md). The three blocks are U+2588 █,
// U+2580 ▀ and U+2584 ▄: UTF-8 E2 96 xx, told apart by the last byte.
const BLOCK_LEAD_1 = 0xe2;
const BLOCK_LEAD_2 = 0x96;
/** Last UTF-8 byte by (upper << 1) | lower; 0 (both light) is a space. */
const BLOCK_LAST = [0, 0x84, 0x80, 0x88];
const SPACE = 0x20;

/** The line break inside a JSON string: backslash, n (two bytes). */
const BACKSLASH = 0x5c;
const LETTER_N = 0x6e;
const ESCAPED_NEWLINE_BYTES = 2;

/** Bytes `writeLines` writes at most: every module a 3-byte block, quiet zone spaces, breaks between lines. */
function maxBytes(matrix: QrMatrix): number {
  const side = matrix.size + 2 * QUIET_ZONE;
  const lines = Math.ceil(side / 2);
  return lines * (2 * QUIET_ZONE + 3 * matrix.size) + (lines - 1) * ESCAPED_NEWLINE_BYTES;
}

/**
 * Writes the QR as lines of Unicode half blocks with a quiet zone of spaces, UTF-8, into `out` from
 * `at`, the lines separated by an escaped line break (JSON string content); returns where it ends.
 * Written as bytes because `text` mode sends them on every request: a string built and then
 * serialised as JSON and encoded as UTF-8 cost three times as much (docs/benchmarks.md#qr-answers). The
 * spaces and line breaks are written byte by byte too: runs of 2 to 4 bytes, where a native `fill` or `copy`
 * call costs more than the bytes.
 */
function writeLines(matrix: QrMatrix, out: Buffer, at: number): number {
  const { size, words, bits } = matrix;
  const side = size + 2 * QUIET_ZONE;
  let k = at;
  for (let top = -QUIET_ZONE; top < size + QUIET_ZONE; top += 2) {
    if (top > -QUIET_ZONE) {
      out[k++] = BACKSLASH;
      out[k++] = LETTER_N;
    }
    const bottom = top + 1;
    if (bottom < 0 || top >= size) {
      k = spaces(out, k, side);
      continue;
    }
    const topAt = top >= 0 ? top * words : -1;
    const bottomAt = bottom < size ? bottom * words : -1;
    k = spaces(out, k, QUIET_ZONE);
    for (let c = 0; c < size; c++) {
      const word = c >>> 5;
      const shift = c & 31;
      const upper = topAt < 0 ? 0 : (bits[topAt + word]! >>> shift) & 1;
      const lower = bottomAt < 0 ? 0 : (bits[bottomAt + word]! >>> shift) & 1;
      const block = (upper << 1) | lower;
      if (block === 0) {
        out[k++] = SPACE;
      } else {
        out[k++] = BLOCK_LEAD_1;
        out[k++] = BLOCK_LEAD_2;
        out[k++] = BLOCK_LAST[block]!;
      }
    }
    k = spaces(out, k, QUIET_ZONE);
  }
  return k;
}

/** Writes `count` spaces into `out` from `at`; returns where they end. */
function spaces(out: Buffer, at: number, count: number): number {
  const end = at + count;
  for (let k = at; k < end; k++) out[k] = SPACE;
  return end;
}

/**
 * The whole `text` mode answer as JSON bytes, `{"signUrl":…,"text":…}`, with the text written
 * straight into the JSON string: its characters are half blocks, spaces and line breaks, and only
 * the line break needs escaping.
 */
export function textAnswerJson(signUrl: string, matrix: QrMatrix): Buffer {
  const head = `{"signUrl":${JSON.stringify(signUrl)},"text":"`;
  const out = Buffer.allocUnsafe(Buffer.byteLength(head) + maxBytes(matrix) + 2);
  let k = out.write(head, 0, 'utf8');
  k = writeLines(matrix, out, k);
  out[k++] = 0x22; // "
  out[k++] = 0x7d; // }
  return out.subarray(0, k);
}
