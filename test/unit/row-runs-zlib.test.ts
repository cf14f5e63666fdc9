import fc from 'fast-check';
import { inflateSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { zlibRowRuns } from '../../src/quicklogin/row-runs-zlib.js';

/** The image the stream stands for: each row repeated `repeat` times. */
const expand = (rows: Uint8Array, rowBytes: number, repeat: number): Buffer => {
  const parts: Buffer[] = [];
  for (let at = 0; at < rows.length; at += rowBytes) for (let k = 0; k < repeat; k++) parts.push(Buffer.from(rows.subarray(at, at + rowBytes)));
  return Buffer.concat(parts);
};

/** Rows of QR-like bytes: mostly 0x00 and 0xff runs, some mixed bytes, and rows equal to the one before. */
const images = fc
  .record({ rowBytes: fc.integer({ min: 5, max: 600 }), count: fc.integer({ min: 1, max: 60 }), repeat: fc.integer({ min: 1, max: 20 }), seed: fc.integer() })
  .map(({ rowBytes, count, repeat, seed }) => {
    let state = seed >>> 0 || 1;
    const next = () => (state = (Math.imul(state, 1103515245) + 12345) >>> 0) >>> 16;
    const rows = new Uint8Array(rowBytes * count);
    for (let r = 0; r < count; r++) {
      if (r > 0 && next() % 4 === 0) {
        rows.copyWithin(r * rowBytes, (r - 1) * rowBytes, r * rowBytes);
        continue;
      }
      for (let i = 0; i < rowBytes; ) {
        const run = 1 + (next() % 12);
        const byte = next() % 3 === 0 ? next() & 0xff : next() % 2 ? 0xff : 0x00;
        rows.fill(byte, r * rowBytes + i, r * rowBytes + Math.min(rowBytes, i + run));
        i += run;
      }
    }
    return { rows, rowBytes, repeat };
  });

describe('zlibRowRuns: a zlib stream of repeated rows', () => {
  it('inflates (node:zlib, Adler-32 checked) to exactly the rows, each repeated', () => {
    fc.assert(
      fc.property(images, ({ rows, rowBytes, repeat }) => {
        expect(inflateSync(zlibRowRuns(rows, rowBytes, repeat)).equals(expand(rows, rowBytes, repeat))).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it('long runs and long repeats split into back-references of at most 258 bytes (remainders of 1 and 2 included)', () => {
    for (const rowBytes of [257, 259, 260, 516, 517])
      for (const repeat of [1, 2, 3, 7]) {
        const rows = new Uint8Array(rowBytes * 3).fill(0xff);
        rows.fill(0, rowBytes, rowBytes + 5);
        expect(inflateSync(zlibRowRuns(rows, rowBytes, repeat)).equals(expand(rows, rowBytes, repeat))).toBe(true);
      }
  });

  it('a QR-sized image of blank rows stays small (repeats cost a back-reference, not a row)', () => {
    const rowBytes = 32;
    const rows = new Uint8Array(rowBytes * 41).fill(0xff);
    // 7,872 bytes of image; each of the 40 repeated module rows is one back-reference of ~3 bytes.
    expect(zlibRowRuns(rows, rowBytes, 6).length).toBeLessThan(160);
  });
});
