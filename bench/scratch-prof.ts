import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, startChild } from './lib/child.js';
import { runLoad } from './lib/load.js';
const port = await freePort();
const dir = mkdtempSync(join(tmpdir(), 'tw-prof-'));
const child = await startChild('tw', new URL('./servers/tabwire.ts', import.meta.url), [String(port), join(dir, 'db.sqlite')]);
const run = async (mode: string, ms: number, log = true) => {
  const m = await runLoad({ key: 'b', label: 'b', host: '127.0.0.1', port, method: 'POST', path: () => '/QuickLogin',
    headers: { 'content-type': 'application/json' }, body: Buffer.from(JSON.stringify({ mode, purpose: 'bench', serviceId: '', tab: '' })),
    expectStatus: 200, connections: 32, warmupMs: 500, durationMs: ms, serverCpuMicros: () => child.cpuMicros() });
  if (log) console.log(mode, Math.round(m.rate), m.cpuPercent?.toFixed(0), m.cpuMicrosPerOp?.toFixed(0), 'other', m.otherCpuPercent?.toFixed(0));
};
try {
  const t = Date.now();
  for (const s of (process.argv[2] ?? '').split(',').filter(Boolean)) await run(s, 500, true);
  console.log('warm', Date.now() - t);
  for (const mode of ['text', 'base64', 'text', 'base64', 'text']) await run(mode, 3000);
} finally { await child.stop(); }
