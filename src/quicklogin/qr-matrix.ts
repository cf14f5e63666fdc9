import encodeQR from 'qr';

/** A square QR symbol: `dark(row, col)` for 0 <= row, col < size. */
export interface QrMatrix {
  size: number;
  dark(row: number, col: number): boolean;
}

/** Quiet zone around the symbol, in modules (ISO/IEC 18004 asks for 4). */
export const QUIET_ZONE = 4;

/**
 * Encodes `text` with the `qr` library (ISO/IEC 18004), error correction M. Byte mode is forced so
 * the symbol version depends on the text's length only, never on its characters: every signUrl of
 * one service has the same size, which lets `image` mode answer width and height without encoding.
 * `raw` output always carries a border of at least one module (its default is 2, which is why its
 * defaults look one version larger); the renderers draw their own quiet zone, so the ring is skipped.
 */
export function encodeQr(text: string): QrMatrix {
  const rows = encodeQR(text, 'raw', { ecc: 'medium', encoding: 'byte', border: 1 });
  return { size: rows.length - 2, dark: (row, col) => rows[row + 1]![col + 1]! };
}

const sizeByLength = new Map<number, number>();

/** Symbol size (modules, without quiet zone) for a text of this UTF-8 length; memoised. */
export function qrSizeFor(text: string): number {
  const length = Buffer.byteLength(text);
  let size = sizeByLength.get(length);
  if (size === undefined) {
    size = encodeQr(text).size;
    sizeByLength.set(length, size);
  }
  return size;
}
