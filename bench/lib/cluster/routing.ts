/**
 * Which nodes an event reaches (bench/cluster.ts): during the cross-node phases every event is for a tab on
 * node A, so node B, holding none of those tabs, should be sent none of them. Counted two ways, whichever the
 * nodes offer: the pub/sub messages Redis delivered to each node, by channel (GET /__bench/pubsub-received,
 * counted in bench/servers/channel-tabwire.ts on every ioredis connection of the node), and any counter of
 * the node's own `GET /metrics` whose name says it counts announcements or events received from the broker.
 */
import { fetchOnce } from '../load/load.js';
import { deltaOf, sumOf } from '../measure/counter-maps.js';
import type { BudgetCheck } from '../measure/types.js';

/** What routing reads of a node: its name and HTTP port (nodes.ts's rig has both; not imported from there, so settings.ts may name RoutingRun without a loop). */
interface RoutedNode {
  name: string;
  server: { port: number };
}

/** A metric counts what a node was sent when its name says so (e.g. `tabwire_broker_announcements_received_total`). */
const RECEIVED_METRIC = /^(tabwire_\w*(?:announce|received|inbound)\w*)(?:\{[^}]*\})?\s+([0-9.e+-]+)$/;

/** What one node had received at one instant. */
export interface RoutingReading {
  /** Pub/sub messages by channel family. */
  pubsub: Map<string, number>;
  /** Received-counters of /metrics, by name (labels summed); empty when the node has none. */
  metrics: Map<string, number>;
}

async function readNode(node: RoutedNode): Promise<RoutingReading> {
  const pubsub = new Map(Object.entries(JSON.parse((await fetchOnce(node.server.port, 'GET', '/__bench/pubsub-received')).body.toString()) as Record<string, number>));
  const metrics = new Map<string, number>();
  const scrape = await fetchOnce(node.server.port, 'GET', '/metrics');
  if (scrape.status === 200) {
    for (const line of scrape.body.toString().split('\n')) {
      const m = RECEIVED_METRIC.exec(line.trim());
      if (m) metrics.set(m[1]!, (metrics.get(m[1]!) ?? 0) + Number(m[2]));
    }
  }
  return { pubsub, metrics };
}

/** Every node's readings now, by node name. */
export async function readRouting(nodes: readonly RoutedNode[]): Promise<Map<string, RoutingReading>> {
  const out = new Map<string, RoutingReading>();
  for (const n of nodes) out.set(n.name, await readNode(n));
  return out;
}

/** What each node received between two readings. */
export function routingDelta(a: Map<string, RoutingReading>, b: Map<string, RoutingReading>): Map<string, RoutingReading> {
  const out = new Map<string, RoutingReading>();
  for (const [name, end] of b) {
    const start = a.get(name) ?? { pubsub: new Map(), metrics: new Map() };
    out.set(name, { pubsub: deltaOf(start.pubsub, end.pubsub), metrics: deltaOf(start.metrics, end.metrics) });
  }
  return out;
}

/** Sum of two windows' deltas, node by node. */
export function routingSum(a: Map<string, RoutingReading>, b: Map<string, RoutingReading>): Map<string, RoutingReading> {
  const out = new Map<string, RoutingReading>();
  for (const name of new Set([...a.keys(), ...b.keys()])) {
    const pubsub = new Map(a.get(name)?.pubsub ?? []);
    const metrics = new Map(a.get(name)?.metrics ?? []);
    for (const [k, v] of b.get(name)?.pubsub ?? []) pubsub.set(k, (pubsub.get(k) ?? 0) + v);
    for (const [k, v] of b.get(name)?.metrics ?? []) metrics.set(k, (metrics.get(k) ?? 0) + v);
    out.set(name, { pubsub, metrics });
  }
  return out;
}

/** Measured routing over the cross-node phases, beside an idle window of the nodes (nothing sent to any tab). */
export interface RoutingRun {
  /** Events for tabs of node A sent from node B in the measured phases (hub.deliver B -> A, SignatureReceived of logins signed on B); warm-up events not counted. */
  crossNodeEvents: number;
  /** Events for tabs of node A sent from node A (hub.deliver A -> A). */
  localEvents: number;
  ms: number;
  received: Map<string, RoutingReading>;
  idleMs: number;
  idle: Map<string, RoutingReading>;
}

/** Messages `node` received in the run beyond its idle rate (pub/sub, all channels) and by the metrics, with a line saying which. */
export function receivedBeyondIdle(run: RoutingRun, node: string): { pubsub: number; metric: number | undefined; byChannel: string } {
  const got = run.received.get(node);
  const idle = run.idle.get(node);
  const scale = run.ms / Math.max(1, run.idleMs);
  const beyond = (m: Map<string, number> | undefined, base: Map<string, number> | undefined): Map<string, number> => {
    const out = new Map<string, number>();
    for (const [k, v] of m ?? []) {
      const extra = v - (base?.get(k) ?? 0) * scale;
      if (extra >= 0.5) out.set(k, Math.round(extra));
    }
    return out;
  };
  const pubsub = beyond(got?.pubsub, idle?.pubsub);
  const metrics = beyond(got?.metrics, idle?.metrics);
  const hasMetric = (got?.metrics.size ?? 0) > 0;
  return {
    pubsub: sumOf(pubsub),
    metric: hasMetric ? sumOf(metrics) : undefined,
    byChannel: [...pubsub].map(([k, v]) => `${k} ${v.toLocaleString('en-US')}`).join(', ') || 'none',
  };
}

/**
 * The budget: node B, holding none of the tabs the events were for, received none of them (beyond what it
 * receives idle). Decided by the nodes' received-counter when they have one, else by the pub/sub messages;
 * unreliable when node A, which holds the tabs, was not seen receiving the cross-node events either (then
 * they travel some way neither count sees).
 */
export function routingBudget(run: RoutingRun, holder: string, other: string): { lines: string[]; budget: BudgetCheck } {
  const a = receivedBeyondIdle(run, holder);
  const b = receivedBeyondIdle(run, other);
  const fmt = (n: number): string => n.toLocaleString('en-US');
  const decisive = b.metric ?? b.pubsub;
  const holderSaw = Math.max(a.pubsub, a.metric ?? 0);
  const blind = holderSaw < run.crossNodeEvents ? `${holder} was counted receiving ${fmt(holderSaw)} messages for ${fmt(run.crossNodeEvents)} cross-node events: they reach it some way neither count sees` : undefined;
  const describe = (name: string, r: ReturnType<typeof receivedBeyondIdle>): string =>
    `${name}: ${fmt(r.pubsub)} pub/sub messages (${r.byChannel})${r.metric === undefined ? '' : `, ${fmt(r.metric)} by its received-counter`}`;
  const lines = [
    `Events for tabs on ${holder} only, ${(run.ms / 1000).toFixed(0)} s (hub.deliver B -> A, A -> A, the logins signed on B): ${fmt(run.crossNodeEvents)} sent from B, ${fmt(run.localEvents)} from A (warm-ups not counted); what each node was sent beyond its idle rate:`,
    `  ${describe(holder, a)}`,
    `  ${describe(other, b)}`,
  ];
  return {
    lines,
    budget: {
      name: `a node holding none of a tab's connections receives none of its events (counted: ${other} while every event is for a tab on ${holder})`,
      met: decisive === 0,
      unreliable: blind,
      detail: `${other} received ${fmt(decisive)} (${b.metric === undefined ? 'pub/sub messages from Redis, all channels' : 'its received-counter'}; ${b.byChannel}); ${holder} ${fmt(holderSaw)} for ${fmt(run.crossNodeEvents)} cross-node and ${fmt(run.localEvents)} local events`,
    },
  };
}
