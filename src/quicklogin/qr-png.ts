import { crc32 } from 'node:zlib';
import { isDefaultPalette, type QrPalette } from './qr-colours.js';
import { QUIET_ZONE, type QrMatrix } from './qr-matrix.js';
import { zlibRowRuns } from './row-runs-zlib.js';

const SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const EMPTY = Buffer.alloc(0);

/** Writes one PNG chunk (length, type, body, CRC over type and body; PNG spec §5.3) at `at`; returns where it ends. */
function writeChunk(out: Buffer, at: number, type: string, body: Buffer): number {
  out.writeUInt32BE(body.length, at);
  out.write(type, at + 4, 'ascii');
  body.copy(out, at + 8);
  out.writeUInt32BE(crc32(out.subarray(at + 4, at + 8 + body.length)), at + 8 + body.length);
  return at + 12 + body.length;
}

const masksBySize = new Map<string, Uint16Array[]>();

/**
 * For each module column, the (byte index, AND mask) pairs that paint its pixels dark in a packed
 * row: a module spans only one or two bytes, so painting it costs one or two operations instead of
 * one per pixel. Memoised per symbol size and scale (one signUrl length gives one size).
 */
function columnMasks(size: number, modulePixels: number): Uint16Array[] {
  const key = `${size}:${modulePixels}`;
  let masks = masksBySize.get(key);
  if (!masks) {
    masks = [];
    for (let c = 0; c < size; c++) {
      const byMask = new Map<number, number>();
      const x0 = (c + QUIET_ZONE) * modulePixels;
      for (let x = x0; x < x0 + modulePixels; x++) {
        const index = 1 + (x >> 3);
        byMask.set(index, (byMask.get(index) ?? 0xff) & ~(0x80 >> (x & 7)) & 0xff);
      }
      masks.push(Uint16Array.from([...byMask].flat()));
    }
    masksBySize.set(key, masks);
  }
  return masks;
}

/** PLTE body (PNG spec §11.2.3): RGB triples, index 0 = dark (bit 0), index 1 = light (bit 1). */
const plte = ({ dark, light }: QrPalette): Buffer => Buffer.from([dark.r, dark.g, dark.b, light.r, light.g, light.b]);

/** Pixel width (= height) of the PNG for a symbol of `size` modules. */
export const pngSide = (size: number, modulePixels: number): number => (size + 2 * QUIET_ZONE) * modulePixels;

/**
 * Renders a QR matrix as a 1-bit greyscale PNG (PNG spec §11.2.2, colour type 0, bit depth 1).
 * A QR code is black and white, so one bit per pixel is all it needs: the raw image is 1/32 of the
 * RGBA that general PNG encoders (such as the `qrcode` package's pngjs path) build and compress, which is
 * why this path keeps up with matrix encoding. Each module row is packed once; the compressed stream
 * repeats it `modulePixels` times without the repeated rows ever being built (row-runs-zlib.ts).
 *
 * With a palette other than black on white the same bits become a 1-bit indexed PNG (colour type 3,
 * PNG spec §11.2.3): bit 0 is PLTE entry 0 (`dark`), bit 1 entry 1 (`light`), so a colour pair costs
 * one 6-byte chunk more and nothing on the default path.
 */
export function renderPng(matrix: QrMatrix, modulePixels: number, palette?: QrPalette): Buffer {
  const side = pngSide(matrix.size, modulePixels);
  const rowBytes = 1 + Math.ceil(side / 8); // filter byte + packed pixels
  // One pixel row per module row, quiet zone included: the image repeats each `modulePixels` times.
  const moduleRows = matrix.size + 2 * QUIET_ZONE;
  const rows = Buffer.allocUnsafe(rowBytes * moduleRows).fill(0xff); // 1 = white
  const masks = columnMasks(matrix.size, modulePixels);
  const { size, words, bits } = matrix;
  for (let r = 0; r < size; r++) {
    const start = (r + QUIET_ZONE) * rowBytes;
    for (let c = 0; c < size; c++) {
      if (((bits[r * words + (c >>> 5)]! >>> (c & 31)) & 1) === 0) continue;
      const column = masks[c]!;
      for (let i = 0; i < column.length; i += 2) rows[start + column[i]!]! &= column[i + 1]!;
    }
  }
  for (let r = 0; r < moduleRows; r++) rows[r * rowBytes] = 0; // filter type None

  const header = Buffer.alloc(13);
  header.writeUInt32BE(side, 0);
  header.writeUInt32BE(side, 4);
  const indexed = palette !== undefined && !isDefaultPalette(palette);
  header[8] = 1; // bit depth
  header[9] = indexed ? 3 : 0; // indexed-colour or greyscale
  // bytes 10-12: compression 0, filter 0, interlace 0
  const idat = zlibRowRuns(rows, rowBytes, modulePixels);
  const colours = indexed ? plte(palette) : undefined;
  // One buffer for the whole file (signature, IHDR, PLTE?, IDAT, IEND): no per-chunk buffers to concatenate.
  const out = Buffer.allocUnsafe(SIGNATURE.length + 12 + header.length + (colours ? 12 + colours.length : 0) + 12 + idat.length + 12);
  SIGNATURE.copy(out, 0);
  let at = writeChunk(out, SIGNATURE.length, 'IHDR', header);
  if (colours) at = writeChunk(out, at, 'PLTE', colours);
  at = writeChunk(out, at, 'IDAT', idat);
  writeChunk(out, at, 'IEND', EMPTY);
  return out;
}
