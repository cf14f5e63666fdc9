/**
 * Reading a QR code: the browser's own BarcodeDetector (Shape Detection API) where it exists (phones'
 * Chromium; absent on desktop Linux Chromium), otherwise jsQR (a maintained pure-JS decoder, bundled
 * at build time into its own file, loaded on first use; no eval, so the strict CSP holds). Pixels never
 * leave the device.
 */
type JsQR = typeof import('./jsqr.js').jsQR;
let fallback: Promise<JsQR> | undefined;
// The decoder is a separate file, fetched the first time it is needed (and kept by the service worker).
const loadJsQR = (): Promise<JsQR> => (fallback ??= import('./jsqr.js').then((m) => m.jsQR));

interface DetectedBarcode {
  rawValue: string;
}
interface BarcodeDetectorLike {
  detect(source: ImageBitmapSource): Promise<DetectedBarcode[]>;
}
interface BarcodeDetectorClass {
  new (options: { formats: string[] }): BarcodeDetectorLike;
  getSupportedFormats(): Promise<string[]>;
}

let detector: Promise<BarcodeDetectorLike | undefined> | undefined;

/** The native detector when it reads QR codes, else undefined (asked once). */
function nativeDetector(): Promise<BarcodeDetectorLike | undefined> {
  detector ??= (async () => {
    const Native = (globalThis as { BarcodeDetector?: BarcodeDetectorClass }).BarcodeDetector;
    if (!Native) return undefined;
    try {
      return (await Native.getSupportedFormats()).includes('qr_code') ? new Native({ formats: ['qr_code'] }) : undefined;
    } catch {
      return undefined;
    }
  })();
  return detector;
}

/** Which decoder this browser uses (shown to the person, and read by tests). */
export async function decoderName(): Promise<'BarcodeDetector' | 'jsQR'> {
  return (await nativeDetector()) ? 'BarcodeDetector' : 'jsQR';
}

/** Decodes the pixels of a canvas with jsQR (both polarities: some screens show light-on-dark codes). */
async function decodePixels(canvas: HTMLCanvasElement): Promise<string | undefined> {
  const jsQR = await loadJsQR();
  const context = canvas.getContext('2d', { willReadFrequently: true });
  if (!context) return undefined;
  const { data, width, height } = context.getImageData(0, 0, canvas.width, canvas.height);
  return jsQR(data, width, height, { inversionAttempts: 'attemptBoth' })?.data;
}

/** Draws an image (or a video frame) onto a canvas at most `max` pixels wide, with a white background. */
function draw(source: CanvasImageSource, width: number, height: number, canvas: HTMLCanvasElement, max = 1024): HTMLCanvasElement {
  const scale = Math.min(1, max / Math.max(width, height));
  canvas.width = Math.max(1, Math.round(width * scale));
  canvas.height = Math.max(1, Math.round(height * scale));
  const context = canvas.getContext('2d', { willReadFrequently: true })!;
  context.fillStyle = '#fff';
  context.fillRect(0, 0, canvas.width, canvas.height);
  // A QR image is made of hard edges; smoothing a small image up blurs them.
  context.imageSmoothingEnabled = false;
  context.drawImage(source, 0, 0, canvas.width, canvas.height);
  return canvas;
}

/** The text of the QR code in an image file (a photo or the service's PNG), or undefined. */
export async function decodeImage(file: Blob): Promise<string | undefined> {
  const bitmap = await createImageBitmap(file);
  try {
    const native = await nativeDetector();
    if (native) {
      const found = await native.detect(bitmap);
      if (found[0]) return found[0].rawValue;
    }
    // Small codes are drawn larger (at least 400 px) so jsQR finds the finder patterns.
    const scale = Math.max(1, Math.ceil(400 / Math.max(bitmap.width, bitmap.height)));
    return decodePixels(draw(bitmap, bitmap.width * scale, bitmap.height * scale, document.createElement('canvas')));
  } finally {
    bitmap.close();
  }
}

/** One frame of a playing video, or undefined when it holds no readable code. */
export async function decodeFrame(video: HTMLVideoElement, canvas: HTMLCanvasElement): Promise<string | undefined> {
  if (video.videoWidth === 0) return undefined;
  const native = await nativeDetector();
  if (native) return (await native.detect(video))[0]?.rawValue;
  return decodePixels(draw(video, video.videoWidth, video.videoHeight, canvas, 640));
}
