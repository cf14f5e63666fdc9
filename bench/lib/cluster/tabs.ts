/**
 * The idle-tabs phase of the cluster benchmark (bench/cluster.ts): every node filled with TABS waiting tabs
 * at once, with each node's RSS and heap before and after and the time and cost of opening them.
 */
import { expect, settledRss, waitUntil } from '../common.js';
import type { Meter } from './meter.js';
import { connected, type NodeRig } from './nodes.js';
import { OPEN_CONCURRENCY, TABS, WARMUP_TABS, type Side } from './settings.js';

type Opened = { opened: number; failed: number; firstError?: string; ms: number; total: number };

/** Warm-up tabs, then the 0-tab memory reading, then TABS tabs on every node at once; then the settled reading. */
export async function holdTabs(nodes: NodeRig[], meter: Meter): Promise<{ memory: Side['memory']; open: Side['open'] }> {
  for (const n of nodes) {
    await n.clients.call('warmup', { count: WARMUP_TABS }, 60_000);
    expect(await waitUntil(async () => (await connected(n.server.port)) === 0, 10_000), `${n.name}: warm-up tabs still counted after they closed`);
  }
  const zero = await Promise.all(nodes.map((n) => settledRss(n.server)));
  const close = await meter.open();
  const started = performance.now();
  const opened = await Promise.all(nodes.map((n) => n.clients.call<Opened>('open', { from: 0, to: TABS, concurrency: OPEN_CONCURRENCY }, 600_000)));
  opened.forEach((o, i) => expect(o.failed === 0, `${nodes[i]!.name}: ${o.failed} tabs failed to open, first: ${o.firstError}`));
  for (const n of nodes) {
    await waitUntil(async () => (await connected(n.server.port)) === TABS, 30_000, 200);
    const count = await connected(n.server.port);
    expect(count === TABS, `${n.name} counts ${count} connected tabs, expected ${TABS}`);
  }
  const openMs = performance.now() - started;
  const window = await close();
  const settled = await Promise.all(nodes.map((n) => settledRss(n.server)));
  return {
    memory: nodes.map((n, i) => ({
      node: n.name,
      tabs: TABS,
      rss0: zero[i]!.rss,
      rss: settled[i]!.rss,
      heap0: zero[i]!.heapUsed + zero[i]!.external,
      heap: settled[i]!.heapUsed + settled[i]!.external,
    })),
    open: { tabs: TABS * nodes.length, ms: openMs, window },
  };
}
