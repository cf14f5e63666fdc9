import { QUIET_ZONE, type QrMatrix } from './qr-matrix.js';

// Each character covers two module rows: upper and lower half. Dark modules are drawn, so the
// block reads dark-on-light in a page's <pre> (docs/signing.md).
const BOTH = 0x2588; // █
const UPPER = 0x2580; // ▀
const LOWER = 0x2584; // ▄
const NONE = 0x20; // space
const NEWLINE = 0x0a;

const charFor = (upper: number, lower: number): number => (upper ? (lower ? BOTH : UPPER) : lower ? LOWER : NONE);

/**
 * Two neighbouring characters as one 32-bit word, indexed by (upper bits << 2) | lower bits of two
 * columns, the left column in bit 0. Built through a 16-bit view so the two characters land in the
 * platform's own order, the order the 32-bit writes below use.
 */
const PAIRS = (() => {
  const units = new Uint16Array(32);
  for (let i = 0; i < 16; i++) {
    const upper = i >> 2;
    const lower = i & 3;
    units[2 * i] = charFor(upper & 1, lower & 1);
    units[2 * i + 1] = charFor(upper >> 1, lower >> 1);
  }
  return new Uint32Array(units.buffer);
})();

/**
 * Renders a QR matrix as lines of Unicode half blocks with a quiet zone of spaces. The characters
 * are written as UTF-16 code units into one buffer and decoded once, two columns per write from a
 * 16-entry table: a character at a time cost about twice as much (docs/benchmarks.md), and `text`
 * mode does this on every request.
 */
export function renderText(matrix: QrMatrix): string {
  const { size, words, bits } = matrix;
  const side = size + 2 * QUIET_ZONE;
  // A line is the side plus its newline. A symbol's size is odd (17 + 4 * version), so a line and
  // the quiet zone have an even number of units: the symbol starts on a 32-bit boundary, and the
  // last pair of a row spills one column into the quiet zone, where the matrix holds zeros.
  const width = side + 1;
  const lines = Math.ceil(side / 2);
  const units = new Uint16Array(lines * width).fill(NONE);
  const pairs = new Uint32Array(units.buffer);
  for (let line = 0; line < lines; line++) {
    const start = line * width;
    if (line > 0) units[start - 1] = NEWLINE;
    const top = 2 * line - QUIET_ZONE;
    const bottom = top + 1;
    if (bottom < 0 || top >= size) continue; // both rows in the quiet zone
    const topAt = top >= 0 ? top * words : -1;
    const bottomAt = bottom < size ? bottom * words : -1;
    let at = (start + QUIET_ZONE) >>> 1;
    for (let c = 0; c < size; c += 2, at++) {
      const word = c >>> 5;
      const shift = c & 31; // even, so both columns sit in the same word
      const upper = topAt < 0 ? 0 : (bits[topAt + word]! >>> shift) & 3;
      const lower = bottomAt < 0 ? 0 : (bits[bottomAt + word]! >>> shift) & 3;
      pairs[at] = PAIRS[(upper << 2) | lower]!;
    }
  }
  // The last line has no newline: its slot is left out.
  return Buffer.from(units.buffer, 0, units.byteLength - 2).toString('utf16le');
}
