/**
 * QR issuance benchmark: how fast tabwire issues QuickLogin codes compared with a bare Fastify route
 * (the budget) and with its own matrix encoder `encodeQr` (the essential work, and the in-server
 * reference that detects a machine whose speed moved), all measured in the same run on the same
 * machine. See docs/benchmarks.md#qr-issuance, and docs/benchmarks-history.md "What the QR issuance benchmark
 * measures" for what each figure means.
 */
import { cpus } from 'node:os';
import { newCode } from '../src/quicklogin/codes.js';
import { encodeQr } from '../src/quicklogin/qr-matrix.js';
import { pngSide } from '../src/quicklogin/qr-png.js';
import { revision, versionOf } from './lib/common.js';
import { freePort } from './lib/processes/child.js';
import { bareFastify, TEXT_VARIANTS, tabwire, tabwireTextVariant } from './lib/qr-issuance/http.js';
import { inProcess } from './lib/qr-issuance/in-process.js';
import { Reference } from './lib/qr-issuance/reference.js';
import { build, type Figures } from './lib/qr-issuance/report.js';
import { MAX_RETRIES, MODULE_PIXELS, OTHER_CPU_LIMIT, QUIET_WAIT_MS, QUIET_ZONE, URL_POOL } from './lib/qr-issuance/settings.js';
import { QuietPolicy } from './lib/measure/quiet.js';
import { inScratchDir } from './lib/measure/scratch-dir.js';
import { backgroundLoad } from './lib/measure/sysload.js';
import type { BenchReport, Benchmark } from './lib/measure/types.js';

/** The QR issuance benchmark: in-process rows, then the bare route, tabwire and its text variants over HTTP. */
export const qrIssuance: Benchmark = {
  name: 'qr-issuance',
  description: 'QuickLogin QR issuance vs a bare Fastify route and the matrix encoder',
  async run(): Promise<BenchReport> {
    return inScratchDir(async (dir) => {
      // On 2 cores a busy machine spoils every figure: wait (bounded) for it to go quiet first.
      let idle = await backgroundLoad();
      for (let waited = 0; idle > OTHER_CPU_LIMIT && waited < QUIET_WAIT_MS; waited += 1_000) {
        if (waited === 0) console.log(`  other processes use ${idle.toFixed(0)}% of a core; waiting up to ${QUIET_WAIT_MS / 1000} s for quiet ...`);
        idle = await backgroundLoad();
      }
      // Ports are chosen first so the in-process URLs have the signUrl's exact length (and QR version).
      const tabwirePort = await freePort();
      const barePort = await freePort();
      const base = `http://127.0.0.1:${tabwirePort}`;
      const urls = Array.from({ length: URL_POOL }, () => `${base}/QuickLogin/Sign/${newCode(Date.now())}`);
      const matrix = encodeQr(urls[0]!);
      const version = (matrix.size - 17) / 4;

      const quiet = new QuietPolicy(OTHER_CPU_LIMIT, MAX_RETRIES);
      const reference = new Reference(`${base}/QuickLogin/Sign/`, quiet);
      const figures: Figures = {
        inProcess: await inProcess(urls, dir, tabwirePort),
        http: [],
      };
      figures.http.push(await bareFastify(barePort, reference));
      figures.http.push(...(await tabwire(tabwirePort, dir, reference, urls[0]!)));
      for (const variant of TEXT_VARIANTS) figures.http.push(await tabwireTextVariant(variant, await freePort(), dir, reference));

      const cpu = cpus();
      const context = [
        `machine: ${cpu.length} cores (${cpu[0]?.model ?? 'unknown CPU'}), ${process.platform}/${process.arch}, Node ${process.version}`,
        `tabwire: ${revision()}`,
        `libraries: fastify ${versionOf('fastify')}, qr ${versionOf('qr')}, better-sqlite3 ${versionOf('better-sqlite3')}`,
        `URL encoded: ${urls[0]} (${Buffer.byteLength(urls[0]!)} bytes, byte mode, EC M -> version ${version}, ${matrix.size}x${matrix.size} modules)`,
        `PNG: ${MODULE_PIXELS} px/module, quiet zone ${QUIET_ZONE} -> ${pngSide(matrix.size, MODULE_PIXELS)} px`,
        `idle check before the run: other processes used ${idle.toFixed(0)}% of a core; 'other' columns: the same during each measurement`,
      ];
      const measurements = [...figures.inProcess, ...figures.http.flatMap((b) => [b.before, b.http, b.after])];
      return { title: qrIssuance.description, context, measurements, ...build(figures, context) };
    });
  },
};
