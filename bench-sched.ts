import { readdirSync, readFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, startChild } from './bench/lib/child.js';
import { runLoad } from './bench/lib/load.js';
import { SERVICE_NODE_FLAGS } from './src/node-flags.js';
const mode = process.argv[2] ?? 'text';
const dir = mkdtempSync(join(tmpdir(), 'sched-'));
const port = await freePort();
const server = await startChild('tabwire', new URL('./bench/servers/tabwire.ts', import.meta.url), [String(port), join(dir, 't.sqlite')], { nodeArgs: [...SERVICE_NODE_FLAGS, ...(process.env.TRACE ? ['--trace-gc'] : [])] });
const pid = server.pid;
const snap = () => Object.fromEntries(readdirSync(`/proc/${pid}/task`).map((t) => {
  const [run, wait, slices] = readFileSync(`/proc/${pid}/task/${t}/schedstat`, 'utf8').trim().split(' ').map(Number);
  const comm = readFileSync(`/proc/${pid}/task/${t}/comm`, 'utf8').trim();
  return [t, { comm, run: run! / 1e6, wait: wait! / 1e6, slices: slices! }];
}));
const body = Buffer.from(JSON.stringify({ mode, purpose: 'bench', serviceId: '', tab: '' }));
const opts = { key: 'x', label: 'x', host: '127.0.0.1' as const, port, method: 'POST' as const, path: () => '/QuickLogin', headers: { 'content-type': 'application/json' }, body, expectStatus: 200, connections: 32, warmupMs: 500, durationMs: 3000 };
await runLoad({ ...opts, durationMs: 3000 });
const a = snap();
const m = await runLoad(opts);
const b = snap();
console.log(mode, Math.round(m.rate), 'req/s');
for (const [t, v] of Object.entries(b)) {
  const o = a[t]; if (!o) continue;
  const run = v.run - o.run, wait = v.wait - o.wait;
  if (run > 20) console.log(v.comm.padEnd(16), 'run', run.toFixed(0), 'ms  runq-wait', wait.toFixed(0), 'ms  slices', v.slices - o.slices);
}
await server.stop();
