/**
 * `npx tsx bench/qr-profile.ts [text|base64|image|png|bare] [seconds] [logLevel]`: runs tabwire (or the bare
 * Fastify route) in a child process under `node --cpu-prof`, loads it over loopback from this process
 * as the qr-issuance benchmark does (32 keep-alive connections), and prints where the server's CPU
 * went: self time by function and by package. Not part of `npm run bench`: it explains the figures,
 * it does not check them. The .cpuprofile is kept (path printed) for a closer look in Chrome DevTools.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SERVICE_NODE_FLAGS } from '../src/node-flags.js';
import { freePort, startChild } from './lib/processes/child.js';
import { fetchOnce, runLoad } from './lib/load/load.js';
import { formatRate, table } from './lib/measure/stats.js';

const mode = process.argv[2] ?? 'text';
const seconds = Number(process.argv[3] ?? '8');
/** tabwire's log level (bench/servers/tabwire.ts): silent unless given, e.g. `info` (the config default). */
const logLevel = process.argv[4] ?? 'silent';
const MODES = ['text', 'base64', 'image', 'png', 'bare'];
if (!MODES.includes(mode) || !(seconds > 0 && seconds <= 60)) {
  console.error(`usage: tsx bench/qr-profile.ts [${MODES.join('|')}] [seconds <= 60] [logLevel]`);
  process.exit(2);
}

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** Where a frame's code comes from: a package, tabwire's own src/, node internals, or V8 (GC, program, idle). */
function origin(url: string, name: string): string {
  if (url === '') return name.startsWith('(') ? name : '(native)';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1]!;
  if (url.startsWith('node:')) return 'node:' + url.slice(5).split('/')[0];
  const src = /\/src\/(.+)$/.exec(url);
  if (src) return `src/${src[1]!.split('/')[0]}`;
  return url.split('/').slice(-2).join('/');
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
const profile = JSON.parse(readFileSync(join(dir, file), 'utf8')) as Profile;
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const selfMicros = new Map<number, number>();
let at = profile.startTime;
let counted = 0;
profile.samples.forEach((id, i) => {
  const delta = profile.timeDeltas[i] ?? 0;
  at += delta;
  if (at < window.from || at > window.to) return;
  counted++;
  selfMicros.set(id, (selfMicros.get(id) ?? 0) + delta);
});
if (counted === 0) throw new Error('no samples inside the measured window (clock mismatch?)');
const busy = [...selfMicros].filter(([id]) => byId.get(id)!.callFrame.functionName !== '(idle)').reduce((s, [, us]) => s + us, 0);

const byFunction = new Map<string, number>();
const byOrigin = new Map<string, number>();
for (const [id, us] of selfMicros) {
  const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
  if (functionName === '(idle)') continue;
  const where = origin(url, functionName);
  const name = (functionName || '(anonymous)').slice(0, 60);
  const file = url.split('/').pop() ?? '';
  const key = `${name}  ${where}${url ? ` ${file}:${lineNumber + 1}` : ''}`;
  byFunction.set(key, (byFunction.get(key) ?? 0) + us);
  byOrigin.set(where, (byOrigin.get(where) ?? 0) + us);
}
const top = (map: Map<string, number>, n: number): string[][] =>
  [...map]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([k, us]) => [k, `${((us / busy) * 100).toFixed(1)}%`]);
console.log(`\n${counted} samples in the measured window; busy (not idle) ${(busy / 1000).toFixed(0)} ms`);
console.log(`\nBy package / area (self time, % of busy samples):`);
for (const line of table(['where', 'share'], top(byOrigin, 25))) console.log(`  ${line}`);
console.log(`\nTop functions (self time):`);
for (const line of table(['function', 'share'], top(byFunction, 40))) console.log(`  ${line}`);
console.log(`\nprofile: ${join(dir, file)} (remove the directory when done)`);
void rmSync; // kept on purpose: the profile is for reading
