/**
 * `npx tsx bench/qr-profile.ts [text|base64|image|png|bare] [seconds] [logLevel]`: runs tabwire (or the bare
 * Fastify route) in a child process under `node --cpu-prof`, loads it over loopback from this process
 * as the qr-issuance benchmark does (32 keep-alive connections), and prints where the server's CPU
 * went: self time by function and by package. Not part of `npm run bench`: it explains the figures,
 * it does not check them. The .cpuprofile is kept (path printed) for a closer look in Chrome DevTools.
 */
import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SERVICE_NODE_FLAGS } from '../src/node-flags.js';
import { freePort, startChild } from './lib/processes/child.js';
import { fetchOnce, runLoad } from './lib/load/load.js';
import { formatRate } from './lib/measure/stats.js';
import { printProfileSummary } from './lib/profile/summary.js';

const mode = process.argv[2] ?? 'text';
const seconds = Number(process.argv[3] ?? '8');
/** tabwire's log level (bench/servers/tabwire.ts): silent unless given, e.g. `info` (the config default). */
const logLevel = process.argv[4] ?? 'silent';
const MODES = ['text', 'base64', 'image', 'png', 'bare'];
if (!MODES.includes(mode) || !(seconds > 0 && seconds <= 60)) {
  console.error(`usage: tsx bench/qr-profile.ts [${MODES.join('|')}] [seconds <= 60] [logLevel]`);
  process.exit(2);
}

/** Load before the counted window: V8 optimises the hot paths in the first seconds. */
const WARMUP_MS = 3_000;
let window = { from: 0, to: Number.POSITIVE_INFINITY };
const dir = mkdtempSync(join(tmpdir(), 'tabwire-profile-'));
const port = await freePort();
const body = (m: string): Buffer => Buffer.from(JSON.stringify({ mode: m, purpose: 'bench', serviceId: '', tab: '' }));
const server =
  mode === 'bare'
    ? await startChild('bare', new URL('./servers/bare.ts', import.meta.url), [String(port)], { nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${dir}`] })
    : await startChild('tabwire', new URL('./servers/tabwire.ts', import.meta.url), [String(port), join(dir, 'tabwire.sqlite'), logLevel], {
        // Started as the service is (src/node-flags.ts), so the profile shows its collector settings.
        nodeArgs: [...SERVICE_NODE_FLAGS, '--cpu-prof', `--cpu-prof-dir=${dir}`],
      });
try {
  let path = (_: number): string => (mode === 'bare' ? '/bare' : '/QuickLogin');
  if (mode === 'png') {
    const codes: string[] = [];
    for (let i = 0; i < 256; i++) {
      const r = await fetchOnce(server.port, 'POST', '/QuickLogin', { mode: 'image', purpose: 'bench', serviceId: '', tab: '' });
      codes.push(new URL((JSON.parse(r.body.toString()) as { src: string }).src).pathname);
    }
    path = (i) => codes[i % codes.length]!;
  }
  // V8 stamps samples with the monotonic clock process.hrtime reads (microseconds): only the measured
  // window is counted, not the process's start-up or the warm-up.
  const loadStart = Number(process.hrtime.bigint() / 1000n);
  window = { from: loadStart + WARMUP_MS * 1000, to: loadStart + (WARMUP_MS + seconds * 1000) * 1000 };
  const m = await runLoad({
    key: mode,
    label: mode,
    host: '127.0.0.1',
    port: server.port,
    method: mode === 'png' ? 'GET' : 'POST',
    path,
    ...(mode === 'png' ? {} : { headers: { 'content-type': 'application/json' }, body: body(mode === 'bare' ? 'text' : mode) }),
    expectStatus: 200,
    connections: 32,
    warmupMs: WARMUP_MS,
    durationMs: seconds * 1000,
    serverCpuMicros: () => server.cpuMicros(),
  });
  console.log(`${mode}: ${formatRate(m.rate)} req/s, server ${m.cpuMicrosPerOp?.toFixed(0)} µs CPU/req (profiler included), ${m.errors ?? 0} errors`);
} finally {
  await server.stop();
}

const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
if (!file) throw new Error(`no profile written in ${dir}`);
printProfileSummary(join(dir, file), window);
