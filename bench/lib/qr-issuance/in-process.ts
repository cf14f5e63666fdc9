/**
 * The in-process rows of the QR issuance benchmark (bench/qr-issuance.ts): the essential work of a code
 * (encode, render, store) timed in this process, with no HTTP and no server running.
 */
import { join } from 'node:path';
import { buildApp } from '../../../src/app.js';
import { loadConfig } from '../../../src/config/load.js';
import { encodeQr } from '../../../src/quicklogin/qr-matrix.js';
import { pngSide, renderPng } from '../../../src/quicklogin/qr-png.js';
import { textAnswerJson } from '../../../src/quicklogin/qr-text.js';
import type { QrMode } from '../../../src/quicklogin/quicklogin.js';
import { versionOf } from '../common.js';
import { IN_FLIGHT, IN_PROCESS, MODES, MODULE_PIXELS, OTHER_CPU_LIMIT } from './settings.js';
import { measureInterleaved, type OperationSpec } from '../measure/timing.js';
import type { Measurement } from '../measure/types.js';

/**
 * Everything measured inside this process, interleaved (see measureInterleaved) so the ratios
 * between rows survive the machine's drift: the encoder, the renderers, and QuickLogin.requestQr
 * called directly on a buildApp instance (code, store insert, rendering; no HTTP).
 */
export async function inProcess(urls: string[], dir: string, port: number): Promise<Measurement[]> {
  const at = (i: number): string => urls[i % urls.length]!;
  const sample = at(0);
  const ownPng = renderPng(encodeQr(sample), MODULE_PIXELS);
  const side = pngSide(encodeQr(sample).size, MODULE_PIXELS);

  // The encoder thread off: these rows measure the work itself, all of it on this thread.
  const config = loadConfig({}, { port, sqliteFile: join(dir, 'in-process.sqlite'), logLevel: 'silent', qrEncoderThread: false });
  const app = await buildApp(config);
  try {
    await app.ready();
    const { quickLogin } = app.tabwire;
    const caller = { sessionHash: null, origin: null };
    // 32 calls at once, as the HTTP rows have 32 requests in flight: the group commit then writes
    // them in one transaction, as it does under load (one call at a time would pay a commit each).
    const requestQr = (mode: QrMode): OperationSpec => ({
      key: `domain.${mode}`,
      label: `quickLogin.requestQr(${mode}) x${IN_FLIGHT}  [code + SQLite insert + render, no HTTP]`,
      unit: 'code',
      op: () => Promise.all(Array.from({ length: IN_FLIGHT }, () => quickLogin.requestQr({ mode, purpose: 'bench', serviceId: '', tab: '' }, caller))),
      async: true,
    });
    const measured = await measureInterleaved(
      [
        { key: 'raw.encodeQr', label: `encodeQr(url)  [qr ${versionOf('qr')}, byte mode, EC M]`, unit: 'matrix', op: (i) => encodeQr(at(i)) },
        { key: 'render.text', label: 'encodeQr + textAnswerJson  [= text mode work]', unit: 'qr', op: (i) => textAnswerJson(at(i), encodeQr(at(i))) },
        {
          key: 'render.png',
          label: `encodeQr + renderPng  [1-bit PNG ${side}px, ${ownPng.length} B]`,
          unit: 'png',
          op: (i) => renderPng(encodeQr(at(i)), MODULE_PIXELS),
        },
        {
          key: 'render.base64',
          label: 'encodeQr + renderPng + base64  [= base64 mode work]',
          unit: 'png',
          op: (i) => renderPng(encodeQr(at(i)), MODULE_PIXELS).toString('base64'),
        },
        ...MODES.map(requestQr),
      ],
      { ...IN_PROCESS, otherLimitPercent: OTHER_CPU_LIMIT },
    );
    // The domain rows timed batches of IN_FLIGHT calls: per code.
    return measured.map((m) =>
      m.key.startsWith('domain.')
        ? { ...m, count: m.count * IN_FLIGHT, rate: m.rate * IN_FLIGHT, cpuMicrosPerOp: m.cpuMicrosPerOp === undefined ? undefined : m.cpuMicrosPerOp / IN_FLIGHT }
        : m,
    );
  } finally {
    await app.close();
  }
}
