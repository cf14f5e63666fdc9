import { newCode } from '../../src/quicklogin/codes.js';
import { encodeQr } from '../../src/quicklogin/qr-matrix.js';
import { measureSync } from '../lib/measure/timing.js';
import type { Measurement } from '../lib/measure/types.js';

const POOL = 1024;

/**
 * The QR benchmark's reference, run inside a server process: encodeQr over signUrls that start
 * with `urlBase` (`http://127.0.0.1:PORT/QuickLogin/Sign/`) and end in fresh 22-character codes,
 * so they have the length, and QR version, of the URLs the service issues.
 */
export function encodeReference(urlBase: string, timing: { warmupMs: number; durationMs: number }): Measurement {
  const urls = Array.from({ length: POOL }, () => `${urlBase}${newCode(Date.now())}`);
  return measureSync('ref', 'encodeQr(url) in the server process', 'matrix', (i) => encodeQr(urls[i % POOL]!), timing);
}
