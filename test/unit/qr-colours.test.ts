import { PNG } from 'pngjs';
import { describe, expect, it } from 'vitest';
import { qrImageParams } from '../../src/http/quicklogin-routes.js';
import { DEFAULT_PALETTE, MIN_CONTRAST, luminance, parseColour, resolvePalette } from '../../src/quicklogin/qr-colours.js';
import { QUIET_ZONE, encodeQr } from '../../src/quicklogin/qr-matrix.js';
import { renderPng } from '../../src/quicklogin/qr-png.js';
import { decodePng } from '../helpers/qr-decode.js';

const NAVY = { r: 0, g: 0, b: 128 };
const IVORY = { r: 0xff, g: 0xff, b: 0xf0 };

describe('fg/bg colour values', () => {
  it.each([
    ['#000080', NAVY],
    ['000080', NAVY],
    ['%23000080', NAVY],
    ['#FFFFF0', IVORY],
    ['navy', NAVY],
    ['NAVY', NAVY],
    ['grey', { r: 128, g: 128, b: 128 }],
  ])('%s is a colour', (value, rgb) => {
    expect(parseColour(value)).toEqual(rgb);
  });

  it.each(['Theme', 'theme', '', '#00008', '#0000800', 'rgb(0,0,128)', '#xyzxyz', 'constructor', '__proto__', 'toString', undefined])(
    '%s is no colour, and no error',
    (value) => {
      expect(parseColour(value)).toBeUndefined();
    },
  );
});

describe('the colour pair', () => {
  it('Theme and unknown values stand for the defaults, black on white', () => {
    expect(resolvePalette('Theme', 'Theme')).toEqual(DEFAULT_PALETTE);
    expect(resolvePalette(undefined, undefined)).toEqual(DEFAULT_PALETTE);
    expect(resolvePalette('navy', 'Theme')).toEqual({ dark: NAVY, light: DEFAULT_PALETTE.light });
    expect(resolvePalette('Theme', '#fffff0')).toEqual({ dark: DEFAULT_PALETTE.dark, light: IVORY });
  });

  it('honours a readable pair', () => {
    expect(resolvePalette('#000080', 'fffff0')).toEqual({ dark: NAVY, light: IVORY });
    expect(resolvePalette('maroon', 'white')).toEqual({ dark: { r: 128, g: 0, b: 0 }, light: DEFAULT_PALETTE.light });
  });

  it.each([
    ['equal colours', 'navy', 'navy'],
    ['white modules on the default background', 'white', 'Theme'],
    ['an inverted code (light modules on dark)', 'white', 'black'],
    ['too little contrast', 'orange', 'white'],
    ['red on white (4:1)', 'red', 'white'],
    ['dark on dark', 'black', 'navy'],
  ])('falls back to black on white for %s', (_name, fg, bg) => {
    expect(resolvePalette(fg, bg)).toEqual(DEFAULT_PALETTE);
  });

  it('draws the line at the WCAG contrast ratio of 4.5:1', () => {
    // #767676 on white is just above 4.5:1, #777777 just below.
    const ratio = (hex: string) => 1.05 / (luminance(parseColour(hex)!) + 0.05);
    expect(MIN_CONTRAST).toBe(4.5);
    expect(ratio('#767676')).toBeGreaterThanOrEqual(MIN_CONTRAST);
    expect(ratio('#777777')).toBeLessThan(MIN_CONTRAST);
    expect(resolvePalette('#767676', 'white').dark).toEqual({ r: 0x76, g: 0x76, b: 0x76 });
    expect(resolvePalette('#777777', 'white')).toEqual(DEFAULT_PALETTE);
  });
});

describe('PNG rendering with a palette', () => {
  const url = 'http://127.0.0.1:8080/QuickLogin/Sign/abcdefghijklmnopqrstuv';
  const matrix = encodeQr(url);
  const pixel = (png: PNG, x: number, y: number) => {
    const i = (y * png.width + x) * 4;
    return { r: png.data[i], g: png.data[i + 1], b: png.data[i + 2] };
  };

  it('keeps the 1-bit greyscale PNG for black on white, byte for byte', () => {
    const plain = renderPng(matrix, 4);
    expect(renderPng(matrix, 4, DEFAULT_PALETTE).equals(plain)).toBe(true);
    expect(plain[25]).toBe(0); // IHDR colour type: greyscale
  });

  it('writes a 1-bit indexed PNG with the two colours, which still decodes', () => {
    const png = renderPng(matrix, 4, { dark: NAVY, light: IVORY });
    expect([png[24], png[25]]).toEqual([1, 3]); // bit depth 1, colour type 3 (PNG §11.2.2)
    expect(png.subarray(37, 41).toString('latin1')).toBe('PLTE');
    const image = PNG.sync.read(png);
    expect(pixel(image, 0, 0)).toEqual(IVORY); // quiet zone
    expect(pixel(image, QUIET_ZONE * 4, QUIET_ZONE * 4)).toEqual(NAVY); // the finder pattern's corner module
    expect(decodePng(png)).toBe(url);
  });

  it('a pair just at the contrast threshold still decodes', () => {
    const palette = resolvePalette('#767676', 'white');
    expect(palette).not.toEqual(DEFAULT_PALETTE);
    for (const modulePixels of [2, 4, 6]) expect(decodePng(renderPng(matrix, modulePixels, palette))).toBe(url);
  });
});

describe('QR image parameters', () => {
  const CODE = 'abcdefghijklmnopqrstuv';
  it('reads the appended suffix, the query, or both (the query wins)', () => {
    expect(qrImageParams(`${CODE}.png`, {})).toEqual({ code: CODE, fg: undefined, bg: undefined });
    expect(qrImageParams(`${CODE}.png&fg=Theme&bg=Theme`, {})).toEqual({ code: CODE, fg: 'Theme', bg: 'Theme' });
    expect(qrImageParams(`${CODE}.png&fg=#000080&x=1`, {})).toEqual({ code: CODE, fg: '#000080', bg: undefined });
    expect(qrImageParams(`${CODE}.png`, { fg: 'navy', bg: ['red', 'white'] })).toEqual({ code: CODE, fg: 'navy', bg: 'white' });
    expect(qrImageParams(`${CODE}.png&fg=red&bg=white`, { fg: 'navy' })).toEqual({ code: CODE, fg: 'navy', bg: 'white' });
  });
});
