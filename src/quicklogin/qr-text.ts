import { QUIET_ZONE, type QrMatrix } from './qr-matrix.js';

// Each character covers two module rows: upper and lower half. Dark modules are drawn, so the
// block reads dark-on-light in a page's <pre> (docs/signing.md).
const BOTH = 0x2588; // █
const UPPER = 0x2580; // ▀
const LOWER = 0x2584; // ▄
const NONE = 0x20; // space
const NEWLINE = 0x0a;

/**
 * Renders a QR matrix as lines of Unicode half blocks with a quiet zone of spaces. The characters
 * are written as UTF-16 code units into one buffer and decoded once: building the string a
 * character at a time cost about twice as much (docs/benchmarks.md), and `text` mode does this on
 * every request.
 */
export function renderText(matrix: QrMatrix): string {
  const { size } = matrix;
  const side = size + 2 * QUIET_ZONE;
  const lines = Math.ceil(side / 2);
  const units = new Uint16Array(lines * (side + 1) - 1); // no newline after the last line
  let k = 0;
  for (let r = 0; r < side; r += 2) {
    if (r > 0) units[k++] = NEWLINE;
    const top = r - QUIET_ZONE;
    const bottom = top + 1;
    const hasTop = top >= 0 && top < size;
    const hasBottom = bottom >= 0 && bottom < size;
    units.fill(NONE, k, k + QUIET_ZONE);
    k += QUIET_ZONE;
    for (let c = 0; c < size; c++) {
      const upper = hasTop && matrix.dark(top, c);
      const lower = hasBottom && matrix.dark(bottom, c);
      units[k++] = upper ? (lower ? BOTH : UPPER) : lower ? LOWER : NONE;
    }
    units.fill(NONE, k, k + QUIET_ZONE);
    k += QUIET_ZONE;
  }
  return Buffer.from(units.buffer, units.byteOffset, units.byteLength).toString('utf16le');
}
