import { QUIET_ZONE, type QrMatrix } from './qr-matrix.js';

// Each character covers two module rows: upper and lower half. Dark modules are drawn, so the
// block reads dark-on-light in a page's <pre> (SPEC.md "QR response" rule 3).
const BOTH = '\u2588'; // █
const UPPER = '\u2580'; // ▀
const LOWER = '\u2584'; // ▄
const NONE = ' ';

/** Renders a QR matrix as lines of Unicode half blocks with a quiet zone of spaces. */
export function renderText(matrix: QrMatrix): string {
  const side = matrix.size + 2 * QUIET_ZONE;
  const dark = (r: number, c: number): boolean => {
    const row = r - QUIET_ZONE;
    const col = c - QUIET_ZONE;
    return row >= 0 && col >= 0 && row < matrix.size && col < matrix.size && matrix.dark(row, col);
  };
  const lines: string[] = [];
  for (let r = 0; r < side; r += 2) {
    let line = '';
    for (let c = 0; c < side; c++) {
      const top = dark(r, c);
      const bottom = r + 1 < side && dark(r + 1, c);
      line += top ? (bottom ? BOTH : UPPER) : bottom ? LOWER : NONE;
    }
    lines.push(line);
  }
  return lines.join('\n');
}
