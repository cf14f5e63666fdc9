import encodeQR, { _tests as qrInternals } from 'qr';

/**
 * A square QR symbol as a bit matrix: module (row, col) is dark when bit `col & 31` of
 * `bits[row * words + (col >>> 5)]` is set; bits past `size` in a row are zero. Renderers read the
 * words directly; `dark` is for everything else.
 */
export interface QrMatrix {
  size: number;
  /** 32-bit words per row. */
  words: number;
  bits: Uint32Array;
  dark(row: number, col: number): boolean;
}

/** Quiet zone around the symbol, in modules (ISO/IEC 18004 asks for 4). */
export const QUIET_ZONE = 4;

function matrixOf(size: number, words: number, bits: Uint32Array): QrMatrix {
  return { size, words, bits, dark: (row, col) => ((bits[row * words + (col >>> 5)]! >>> (col & 31)) & 1) === 1 };
}

/**
 * The public way: `encodeQR(text, 'raw')` (ISO/IEC 18004), error correction M, byte mode forced so
 * the symbol version depends on the text's length only, never on its characters: every signUrl of
 * one service has the same size, which lets `image` mode answer width and height without encoding.
 * `raw` output always carries a border of at least one module; the renderers draw their own quiet
 * zone, so the ring is skipped.
 */
export function encodeQrPublic(text: string): QrMatrix {
  const rows = encodeQR(text, 'raw', { ecc: 'medium', encoding: 'byte', border: 1 });
  const size = rows.length - 2;
  const words = (size + 31) >>> 5;
  const bits = new Uint32Array(size * words);
  for (let r = 0; r < size; r++) {
    const row = rows[r + 1]!;
    for (let c = 0; c < size; c++) if (row[c + 1]) bits[r * words + (c >>> 5)]! |= 1 << (c & 31);
  }
  return matrixOf(size, words, bits);
}

/** The two steps of `encodeQR` that make the symbol, as `qr` exports them for its own tests. */
interface QrSteps {
  encodeData(version: number, ecc: 'medium', text: string, encoding: 'byte', utf8: Uint8Array): Uint8Array;
  drawSymbol(version: number, ecc: 'medium', data: Uint8Array): { size: number; words: number; v: Uint32Array };
}

const steps = qrInternals as unknown as Partial<QrSteps>;
const hasSteps = typeof steps.encodeData === 'function' && typeof steps.drawSymbol === 'function';
const utf8 = new TextEncoder();
const versionByLength = new Map<number, number>();

/**
 * The symbol version for a text of `byteLength` UTF-8 bytes: the one `encodeQR` chose for the first
 * such text (byte mode, so it follows from the length alone); memoised.
 */
function versionFor(text: string, byteLength: number): number {
  let version = versionByLength.get(byteLength);
  if (version === undefined) {
    version = (encodeQrPublic(text).size - 17) / 4;
    versionByLength.set(byteLength, version);
  }
  return version;
}

/**
 * Encodes `text` as `encodeQrPublic` does, module for module, at about two thirds of its cost: it
 * calls the library's own data encoder and symbol drawer (mask chosen by the library's penalty
 * rule) and skips what `encodeQR` adds around them for a one-off caller: argument checks, the
 * version search, and its array-of-arrays output, which cost a third of the call and which every
 * renderer here would convert back to bits. Those two functions are the `_tests` export of `qr`,
 * not its documented API: the version is pinned in package.json, `test/unit/qr-matrix.test.ts`
 * compares both paths on random signUrls, and without the export this falls back to the public way.
 */
export function encodeQr(text: string): QrMatrix {
  if (!hasSteps) return encodeQrPublic(text);
  const bytes = utf8.encode(text);
  const version = versionFor(text, bytes.length);
  const drawn = steps.drawSymbol!(version, 'medium', steps.encodeData!(version, 'medium', text, 'byte', bytes));
  // drawSymbol returns the library's reusable work matrix: copy it before the next encode overwrites it.
  return matrixOf(drawn.size, drawn.words, drawn.v.slice());
}

/** Symbol size (modules, without quiet zone) for a text of this UTF-8 length, without encoding it (after the first). */
export const qrSizeFor = (text: string): number => 17 + 4 * versionFor(text, Buffer.byteLength(text));
