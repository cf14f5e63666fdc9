import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodeQr, encodeQrPublic, qrSizeFor, QUIET_ZONE } from '../../src/quicklogin/qr-matrix.js';
import { renderPng } from '../../src/quicklogin/qr-png.js';
import { textAnswerJson } from '../../src/quicklogin/qr-text.js';
import type { QrMatrix } from '../../src/quicklogin/qr-matrix.js';

/** The text of a `text` mode answer. */
const textOf = (url: string, matrix: QrMatrix): string => (JSON.parse(textAnswerJson(url, matrix).toString('utf8')) as { text: string }).text;
import { decodePng, decodeText } from '../helpers/qr-decode.js';

/**
 * ISO/IEC 18004 Table 7: data capacity in byte mode at error correction M, versions 1 to 40. The
 * version of a byte-mode symbol follows from the text's length alone; this table is independent of
 * any encoder, so it checks the library tabwire uses as well as the rule.
 */
const BYTE_CAPACITY_M = [
  14, 26, 42, 62, 84, 106, 122, 152, 180, 213, 251, 287, 331, 362, 412, 450, 504, 560, 624, 666, 711, 779, 857, 911, 997, 1059, 1125, 1190, 1264,
  1370, 1452, 1538, 1628, 1722, 1809, 1911, 1989, 2099, 2213, 2331,
];
const sizeForLength = (bytes: number): number => 17 + 4 * (BYTE_CAPACITY_M.findIndex((capacity) => capacity >= bytes) + 1);

/** Public base URLs (no path, config `publicBaseUrl`) from short to the longest a host name allows. */
const BASES = {
  'loopback default': 'http://127.0.0.1:8080',
  public: 'https://auth.example.org',
  long: 'https://login.identity-services.a-rather-long-organisation-name.example.com:8443',
  'longest host': `https://${Array.from({ length: 4 }, () => 'a'.repeat(62)).join('.')}:65535`,
};

const BASE64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
/** 22-character codes as newCode makes them, edge cases first: only digits, only upper case (alphanumeric-mode text). */
const codes = fc.oneof(
  fc.constantFrom('0'.repeat(22), 'A'.repeat(22), '-'.repeat(22), 'Z9'.repeat(11)),
  fc.string({ unit: fc.constantFrom(...BASE64URL), minLength: 22, maxLength: 22 }),
);

describe('every signUrl of a service has one symbol size (image mode answers width/height without encoding)', () => {
  it.each(Object.entries(BASES))('%s base: the size is the ISO byte-mode size for the length, whatever the code', (_, base) => {
    const url = (code: string) => `${base}/QuickLogin/Sign/${code}`;
    const expected = sizeForLength(Buffer.byteLength(url('x'.repeat(22))));
    expect(qrSizeFor(url('A'.repeat(22)))).toBe(expected);
    fc.assert(
      fc.property(codes, (code) => encodeQr(url(code)).size === expected),
      { numRuns: 60 },
    );
  });

  it('the short and the long base give different sizes, each its own', () => {
    const loopback = qrSizeFor(`${BASES['loopback default']}/QuickLogin/Sign/${'A'.repeat(22)}`);
    const long = qrSizeFor(`${BASES.long}/QuickLogin/Sign/${'A'.repeat(22)}`);
    expect([loopback, long]).toEqual([33, 45]); // versions 4 and 7 (version 7 and up carry version information)
  });
});

describe('the fast path (the library\'s own steps) draws what its public encodeQR draws', () => {
  it.each(Object.entries(BASES))('%s base: module for module, mask included, on random codes', (_, base) => {
    fc.assert(
      fc.property(codes, (code) => {
        const url = `${base}/QuickLogin/Sign/${code}`;
        const fast = encodeQr(url);
        const reference = encodeQrPublic(url);
        return fast.size === reference.size && fast.words === reference.words && Buffer.from(fast.bits.buffer).equals(Buffer.from(reference.bits.buffer));
      }),
      { numRuns: 80 },
    );
  });

  it('a matrix stays as it was drawn after later encodes (the library reuses its work matrix)', () => {
    const first = encodeQr(`${BASES.public}/QuickLogin/Sign/${'A'.repeat(22)}`);
    const copy = first.bits.slice();
    encodeQr(`${BASES.public}/QuickLogin/Sign/${'B'.repeat(22)}`);
    expect(first.bits).toEqual(copy);
  });
});

describe('the matrix is the symbol alone (regression: the encoder\'s own border counted as modules)', () => {
  it('starts with the top-left finder pattern at (0, 0) and its light separator at (7, 7)', () => {
    const matrix = encodeQr(`${BASES.public}/QuickLogin/Sign/${'A'.repeat(22)}`);
    for (let i = 0; i < 7; i++) expect([matrix.dark(0, i), matrix.dark(i, 0), matrix.dark(6, i), matrix.dark(i, 6)]).toEqual([true, true, true, true]);
    expect(matrix.dark(1, 1)).toBe(false);
    expect(matrix.dark(2, 2)).toBe(true);
    expect(matrix.dark(7, 7)).toBe(false);
    // The top-right finder ends in the last column.
    expect(matrix.dark(0, matrix.size - 1)).toBe(true);
    expect(matrix.dark(0, matrix.size - 8)).toBe(false);
  });
});

describe('PNG and text renderings decode with an independent decoder (jsQR)', () => {
  const examples = ['A'.repeat(22), '0'.repeat(22), 'QbDoLAEKEbHeN2GUOeNQvw', '-_-_-_-_-_-_-_-_-_-_-_'];
  it.each(Object.entries(BASES))('%s base', (_, base) => {
    for (const code of examples) {
      const url = `${base}/QuickLogin/Sign/${code}`;
      const matrix = encodeQr(url);
      for (const modulePixels of [2, 6]) {
        const png = renderPng(matrix, modulePixels);
        expect(png.readUInt32BE(16)).toBe((matrix.size + 2 * QUIET_ZONE) * modulePixels);
        expect(decodePng(png)).toBe(url);
      }
      expect(decodeText(textOf(url, matrix))).toBe(url);
    }
  });
});

describe('text mode\'s answer, written as JSON bytes', () => {
  it.each(Object.entries(BASES))('%s base: parses to exactly { signUrl, text }, and the text decodes to the signUrl', (_, base) => {
    fc.assert(
      fc.property(codes, (code) => {
        const url = `${base}/QuickLogin/Sign/${code}`;
        const matrix = encodeQr(url);
        const answer: unknown = JSON.parse(textAnswerJson(url, matrix).toString('utf8'));
        expect(answer).toEqual({ signUrl: url, text: expect.any(String) });
        expect(decodeText((answer as { text: string }).text)).toBe(url);
      }),
      { numRuns: 40 },
    );
  });

  it('a signUrl with characters JSON escapes stays valid JSON', () => {
    const url = 'https://auth.example.org/"quoted"\\/QuickLogin/Sign/' + 'A'.repeat(22);
    expect(JSON.parse(textAnswerJson(url, encodeQr(url)).toString('utf8')).signUrl).toBe(url);
  });

  it('the text is half blocks and spaces in lines of one width, the quiet zone included', () => {
    const url = `${BASES.public}/QuickLogin/Sign/${'A'.repeat(22)}`;
    const matrix = encodeQr(url);
    const lines = textOf(url, matrix).split('\n');
    const side = matrix.size + 2 * QUIET_ZONE;
    expect(lines).toHaveLength(Math.ceil(side / 2));
    for (const line of lines) expect([...line]).toHaveLength(side);
    expect(lines[0]).toBe(' '.repeat(side));
    expect(new Set(lines.join(''))).toEqual(new Set([' ', '\u2588', '\u2580', '\u2584']));
  });
});
