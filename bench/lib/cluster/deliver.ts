/**
 * The event-latency phase of the cluster benchmark (bench/cluster.ts): hub.deliver on one node to tabs held
 * by another (or the same), measured at the tabs, with the runs taken while a presence refresh ran apart.
 */
import { OTHER_CPU_LIMIT, expect, waitUntil } from '../common.js';
import type { Meter } from './meter.js';
import { refreshesOf, watchLoops, type NodeRig } from './nodes.js';
import { EVENTS, PER_SECOND, TARGETS, WARMUP_EVENTS, type DeliverRun, type LatencySummary } from './settings.js';
import { fetchOnce } from '../load/load.js';
import type { QuietPolicy } from '../measure/quiet.js';
import { percentile } from '../measure/stats.js';

const summary = (values: number[]): LatencySummary => ({
  count: values.length,
  p50: percentile(values, 50),
  p90: percentile(values, 90),
  p99: percentile(values, 99),
  max: percentile(values, 100),
  negative: values.filter((v) => v < 0).length,
});

/**
 * hub.deliver on `sender` to random tabs of `holder`'s first TARGETS, paced, measured at the holder's clients.
 * With `cluster` nodes, the events sent while one of them ran its presence refresh are also summarised apart.
 */
async function deliverRun(sender: NodeRig, holder: NodeRig, count: number, meter: Meter, cluster: NodeRig[]): Promise<Omit<DeliverRun, 'attempts'>> {
  await holder.clients.call('latency-reset');
  const loops = await watchLoops(cluster.length > 0 ? cluster : [holder]);
  const close = await meter.open();
  const r = await fetchOnce(sender.server.port, 'POST', '/__bench/deliver-run', { prefix: holder.prefix, tabs: TARGETS, count, perSecond: PER_SECOND });
  expect(r.status === 200, `deliver-run answered ${r.status}: ${r.body.toString().slice(0, 300)}`);
  const sent = JSON.parse(r.body.toString()) as { count: number };
  await waitUntil(async () => (await holder.clients.call<number>('latency-count')) >= sent.count, 10_000, 50);
  const window = await close();
  const loopReadings = await loops();
  const latency = await holder.clients.call<LatencySummary>('latency-result');
  if (cluster.length === 0) return { latency, sent: sent.count, window, loops: loopReadings };
  const samples = await holder.clients.call<[string, number][]>('latency-samples');
  const refreshes = await refreshesOf(cluster);
  const first = samples.reduce((m, [t]) => (BigInt(t) < m ? BigInt(t) : m), BigInt(samples[0]?.[0] ?? 0));
  const inWindow = refreshes.filter(([, end]) => end >= first);
  // An event sent while a refresh ran on either node (or in the millisecond before it started).
  const during = (t: bigint): boolean => inWindow.some(([start, end]) => t >= start - 1_000_000n && t <= end);
  const split = { during: [] as number[], outside: [] as number[] };
  for (const [t, v] of samples) (during(BigInt(t)) ? split.during : split.outside).push(v);
  return {
    latency,
    sent: sent.count,
    window,
    loops: loopReadings,
    refresh: {
      runs: inWindow.length,
      ms: inWindow.map(([a, b]) => Number(b - a) / 1e6),
      during: summary(split.during),
      outside: summary(split.outside),
    },
  };
}

/** A warm-up run, then EVENTS measured, re-run while other processes took over OTHER_CPU_LIMIT (the quietest kept). */
export async function deliverMeasured(sender: NodeRig, holder: NodeRig, meter: Meter, quiet: QuietPolicy, cluster: NodeRig[] = []): Promise<DeliverRun> {
  const warm = await deliverRun(sender, holder, WARMUP_EVENTS, meter, cluster);
  expect(warm.latency.count === WARMUP_EVENTS, `warm-up: ${warm.latency.count} of ${WARMUP_EVENTS} events arrived`);
  const { value, attempts } = await quiet.best(
    () => deliverRun(sender, holder, EVENTS, meter, cluster),
    (r) => Math.max(0, r.window.otherPercent - OTHER_CPU_LIMIT),
  );
  expect(value.latency.count === value.sent, `${value.latency.count} of ${value.sent} events arrived`);
  expect(value.latency.negative === 0, `${value.latency.negative} events arrived before they were sent`);
  return { ...value, attempts };
}
