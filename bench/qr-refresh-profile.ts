/**
 * `npx tsx bench/qr-refresh-profile.ts [seconds] [tabs] [bare]`: the qr-refresh benchmark's embedded side (or,
 * with `bare`, its bare Fastify route) under `node --cpu-prof`: an embedded node holding `tabs` waiting tabs,
 * each asking again for its `text` code with its own cookie (bench/lib/refresh/rounds.ts's requests), after a
 * first pass that stores every tab's request. Prints the server's CPU per refresh (all threads, /proc) and
 * where its main thread's CPU went (self time by package and function). Not part of `npm run bench`: it
 * explains the qr-refresh figures, it does not check them.
 */
import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SERVICE_NODE_FLAGS } from '../src/node-flags.js';
import { expect } from './lib/common.js';
import { startNode, stopNodes } from './lib/cluster/nodes.js';
import { NO_PERIODIC_BINDING_REFRESH, PURPOSE, QR_LIMITS } from './lib/cluster/settings.js';
import { tabIdOf } from './lib/load/channel-ids.js';
import { runMultiLoad } from './lib/load/multi-load.js';
import { procCpuMicros } from './lib/measure/proc-cpu.js';
import { freePort, startChild } from './lib/processes/child.js';
import { printProfileSummary } from './lib/profile/summary.js';
import { checkBareAnswer, checkQrAnswer, refreshRequests } from './lib/refresh/rounds.js';
import { FIRST_PASS_MS, LOAD } from './lib/refresh/settings.js';

const seconds = Number(process.argv[2] ?? '8');
const tabs = Number(process.argv[3] ?? '500');
const bare = process.argv[4] === 'bare';
if (!(seconds > 0 && seconds <= 60) || !(tabs > 0 && tabs <= 2_000)) {
  console.error('usage: tsx bench/qr-refresh-profile.ts [seconds <= 60] [tabs <= 2000] [bare]');
  process.exit(2);
}

const dir = mkdtempSync(join(tmpdir(), 'tabwire-refresh-profile-'));
const prof = ['--cpu-prof', `--cpu-prof-dir=${join(dir, 'prof')}`];
const port = await freePort();
const origin = `http://127.0.0.1:${port}`;
const node = await startNode('embedded node', { port, sqliteFile: join(dir, 'embedded.sqlite'), ...QR_LIMITS, ...NO_PERIODIC_BINDING_REFRESH }, origin, 'e-', bare ? SERVICE_NODE_FLAGS : [...SERVICE_NODE_FLAGS, ...prof]);
let window = { from: 0, to: Number.POSITIVE_INFINITY };
try {
  const opened = await node.clients.call<{ opened: number; failed: number; firstError?: string }>('open', { from: 0, to: tabs, concurrency: 100 }, 300_000);
  expect(opened.failed === 0, `${opened.failed} tabs failed to open: ${opened.firstError}`);
  const cookies = await node.clients.call<string[]>('cookies', { from: 0, to: tabs });
  const tabCookies = cookies.map((cookie, i) => ({ tab: tabIdOf(node.prefix, i), cookie }));
  const requests = refreshRequests(tabCookies, port, origin, PURPOSE);
  // Every tab's first request (its request stored), uncounted.
  const first = await runMultiLoad({ targets: [{ port, connections: LOAD.connections }], request: (i) => requests[i % requests.length]!, expectStatus: 200, check: checkQrAnswer, warmupMs: 0, durationMs: FIRST_PASS_MS });
  expect(first.errors === 0, `first pass: ${first.firstError}`);

  const target = bare ? await startChild('bare', new URL('./servers/bare.ts', import.meta.url), [String(await freePort())], { nodeArgs: prof }) : node.server;
  const loadRequests = bare ? refreshRequests(tabCookies, target.port, origin, PURPOSE, '/bare') : requests;
  let cpuAtOpen = 0;
  let cpu = 0;
  const m = await runMultiLoad({
    targets: [{ port: target.port, connections: LOAD.connections }],
    request: (i) => loadRequests[i % loadRequests.length]!,
    expectStatus: 200,
    check: bare ? checkBareAnswer : checkQrAnswer,
    warmupMs: LOAD.warmupMs,
    durationMs: seconds * 1000,
    onWindow: {
      open: async () => {
        cpuAtOpen = procCpuMicros(target.pid);
        const now = Number(process.hrtime.bigint() / 1000n);
        window = { from: now, to: now + seconds * 1_000_000 };
      },
      close: async () => {
        cpu = procCpuMicros(target.pid) - cpuAtOpen;
      },
    },
  });
  expect(m.errors === 0, `load: ${m.firstError}`);
  console.log(`${bare ? 'bare' : 'embedded'} refresh: ${Math.round(m.rate)} req/s, server ${(cpu / m.count).toFixed(0)} µs CPU/req, all threads (profiler included)`);
  if (bare) await target.stop();
} finally {
  await stopNodes([node]);
}
const file = readdirSync(join(dir, 'prof')).find((f) => f.endsWith('.cpuprofile'));
if (!file) throw new Error(`no profile written in ${dir}`);
printProfileSummary(join(dir, 'prof', file), window);
