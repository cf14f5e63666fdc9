/**
 * The jsQR decoder as a file of its own (`/wallet/jsqr.js`, built by scripts/build-wallet.mjs): most of the
 * wallet's weight, so it is loaded only when a browser without BarcodeDetector first reads a code.
 */
import jsQRModule from 'jsqr';

type JsQR = typeof jsQRModule;
// jsqr is a UMD bundle whose module object holds `default`; depending on the bundler's interop the
// import is the function itself or that object.
export const jsQR: JsQR = typeof jsQRModule === 'function' ? jsQRModule : (jsQRModule as unknown as { default: JsQR }).default;
