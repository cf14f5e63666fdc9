import jsQRModule from 'jsqr';
import { PNG } from 'pngjs';

type JsQR = typeof jsQRModule.default;
// jsqr is CommonJS with a `default` export: depending on the loader's interop the import is the
// function itself or the module object holding it.
const jsQR: JsQR = typeof jsQRModule === 'function' ? (jsQRModule as unknown as JsQR) : jsQRModule.default;

/** Decodes a QR code from PNG bytes with jsQR (an independent decoder); null when unreadable. */
export function decodePng(png: Buffer): string | null {
  const image = PNG.sync.read(png);
  const result = jsQR(new Uint8ClampedArray(image.data), image.width, image.height);
  return result?.data ?? null;
}

/**
 * Renders a half-block text QR to pixels as a monospace <pre> would (one column and two rows of
 * modules per character), then decodes it.
 */
export function decodeText(text: string, scale = 4): string | null {
  const lines = text.split('\n');
  const width = Math.max(...lines.map((l) => [...l].length));
  const height = lines.length * 2;
  const data = new Uint8ClampedArray(width * scale * height * scale * 4).fill(255);
  const paint = (x: number, y: number) => {
    for (let dy = 0; dy < scale; dy++)
      for (let dx = 0; dx < scale; dx++) {
        const i = ((y * scale + dy) * width * scale + (x * scale + dx)) * 4;
        data[i] = data[i + 1] = data[i + 2] = 0;
      }
  };
  lines.forEach((line, row) => {
    [...line].forEach((ch, col) => {
      if (ch === '\u2588' || ch === '\u2580') paint(col, row * 2);
      if (ch === '\u2588' || ch === '\u2584') paint(col, row * 2 + 1);
    });
  });
  return jsQR(data, width * scale, height * scale)?.data ?? null;
}
