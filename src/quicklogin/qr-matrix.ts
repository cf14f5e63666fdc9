import QRCode from 'qrcode';

/** A square QR symbol: `dark(row, col)` for 0 <= row, col < size. */
export interface QrMatrix {
  size: number;
  dark(row: number, col: number): boolean;
}

/** Quiet zone around the symbol, in modules (ISO/IEC 18004 asks for 4). */
export const QUIET_ZONE = 4;

/**
 * Encodes `text` with the maintained `qrcode` library. Byte mode is forced so the symbol version
 * depends on the text's length only, never on its characters: every signUrl of one service has
 * the same size, which lets `image` mode answer width and height without encoding.
 */
export function encodeQr(text: string): QrMatrix {
  const { modules } = QRCode.create([{ data: Buffer.from(text, 'utf8'), mode: 'byte' }], { errorCorrectionLevel: 'M' });
  const { size, data } = modules;
  return { size, dark: (row, col) => data[row * size + col] === 1 };
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
