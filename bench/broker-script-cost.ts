/**
 * What each event-stream script of the Redis broker costs Redis (src/broker/redis-broker-scripts.ts;
 * docs/redis.md "Event streams"): the real RedisBroker of two nodes on a private Redis drives N waiting tabs
 * through a login's cycle (Register, events published with publish keys from the other node and marked sent,
 * the rolling re-hold, a resume, a retried publish, a stream past its bounds, a detach), one phase per kind of
 * operation. For each phase it prints the commands Redis ran inside the scripts per operation (INFO
 * commandstats counts them: every `cmdstat_*` but the scripts' own `evalsha`/`eval`), by command, the scripts'
 * own time per operation (their `evalsha` usec, inner commands included: wall time, which a busy machine
 * stretches) and Redis's CPU per operation (INFO cpu, its main thread's user + system time, read to the µs;
 * it includes reading the request and writing the reply and the announcement). Redis runs one script at a time, so the
 * inner commands are its CPU; this says where it goes. Then a login's two calls (the publish from another
 * node, announced to the tab's node, and the tab's node's sent mark) from 1, 16 and 64 nodes at once, each
 * node its own connection and its logins one after another: Redis's CPU per login when its calls come one at a
 * time, against when many nodes' calls meet (the capacity estimate's two readings, docs/capacity-estimate.md).
 * Not a budget: `npx tsx bench/broker-script-cost.ts [tabs] [rounds]` (default 4,000 tabs, 3 rounds of fresh
 * tabs; medians over the rounds).
 */
import { Redis } from 'ioredis';
import { pino } from 'pino';
import type { BrokerBounds } from '../src/broker/broker.js';
import { RedisBroker } from '../src/broker/redis-broker.js';
import { DEFAULT_ROLL_MS } from '../src/hub/presence-keeper.js';
import type { TabAddress } from '../src/protocol/address.js';
import { connectRedis, type RedisConnection } from '../src/redis/connection.js';
import { PRESENCE_TTL_MS } from '../src/wiring/shared.js';
import { machineLine, revision } from './lib/common.js';
import { median } from './lib/measure/stats.js';
import { startBenchRedis, type RedisReading } from './lib/processes/redis.js';

const TABS = Number(process.argv[2] ?? 4_000);
const ROUNDS = Number(process.argv[3] ?? 3);
/** Operations in flight at once, as a busy node's command connection has them. */
const BATCH = 100;
/** The stream bounds with the configuration's defaults (config/schema.ts: outboxLimit, outboxMaxAgeSeconds, tabIdleSeconds), as src/wiring/shared.ts makes them. */
const BOUNDS: BrokerBounds = { limit: 100, maxAgeMs: 60_000, presenceTtlMs: PRESENCE_TTL_MS, idleStreamMs: 60_000, keepAliveMs: 4 * DEFAULT_ROLL_MS };
/** Tabs of the full-stream phase (each gets `limit` + 20 events): a twentieth of the tabs. */
const FULL_SHARE = 20;
const SCRIPT_COMMANDS = new Set(['evalsha', 'eval']);

/** Redis's main thread CPU so far, µs (INFO cpu: getrusage, finer than /proc's 10 ms ticks). */
async function redisCpu(client: Redis): Promise<number> {
  const info = await client.info('cpu');
  const field = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)?.[1] ?? NaN);
  return Math.round((field('used_cpu_user_main_thread') + field('used_cpu_sys_main_thread')) * 1e6);
}

interface Reading {
  redis: RedisReading;
  cpu: number;
}

interface PhaseCost {
  ops: number;
  inner: Map<string, number>;
  scriptMicros: number;
  cpuMicros: number;
}

const silent = pino({ level: 'silent' });
const event = (n: number) => ({ type: 'Bench', data: { n, text: 'a login event of a typical size '.repeat(3) } });

/** Runs `op` for every item, `BATCH` at a time. */
async function inBatches<T>(items: readonly T[], op: (item: T, i: number) => Promise<unknown>): Promise<void> {
  for (let i = 0; i < items.length; i += BATCH) await Promise.all(items.slice(i, i + BATCH).map((item, j) => op(item, i + j)));
}

/** What Redis did between two readings, for `ops` operations. */
function costBetween(before: Reading, after: Reading, ops: number): PhaseCost {
  const inner = new Map<string, number>();
  let scriptMicros = 0;
  for (const [cmd, calls] of after.redis.calls) {
    const delta = calls - (before.redis.calls.get(cmd) ?? 0);
    if (delta === 0) continue;
    if (SCRIPT_COMMANDS.has(cmd)) scriptMicros += (after.redis.usec.get(cmd) ?? 0) - (before.redis.usec.get(cmd) ?? 0);
    else inner.set(cmd, delta);
  }
  return { ops, inner, scriptMicros, cpuMicros: after.cpu - before.cpu };
}

/** One round: fresh tabs through every phase; the cost of each. */
async function round(read: () => Promise<Reading>, a: RedisBroker, b: RedisBroker, r: string, count = TABS): Promise<Map<string, PhaseCost>> {
  const costs = new Map<string, PhaseCost>();
  const tabs: TabAddress[] = Array.from({ length: count }, (_, i) => ({ session: r.padEnd(64, 's'), tabId: `tab-${i}` }));
  const full = tabs.slice(0, Math.ceil(count / FULL_SHARE));
  const ids = new Map<TabAddress, number>();
  let now = Date.now();
  const phase = async (name: string, items: readonly TabAddress[], op: (to: TabAddress, i: number) => Promise<unknown>, perItem = 1) => {
    const before = await read();
    await inBatches(items, op);
    costs.set(name, costBetween(before, await read(), items.length * perItem));
  };
  const publish = (from: RedisBroker, to: TabAddress, n: number, key: string) =>
    from.publish(to, event(n), now, undefined, key).then((o) => ids.set(to, o.frame!.id));

  // Register: the node holds the tab, connected, and reads what it missed (nothing yet).
  await phase('twHold, Register', tabs, (to) => a.hold(to, 'node-a', Number.MAX_SAFE_INTEGER, now));
  await phase('twRead, Register', tabs, (to) => a.read(to, undefined, now));
  // A login's event, published on the other node, written by the tab's node and marked sent there.
  await phase('twPublish, first event', tabs, (to) => publish(b, to, 1, `r${r}-1`));
  await phase('twMarkSent', tabs, (to) => a.markSent(to, ids.get(to)!));
  now += 1_000;
  await phase('twPublish, second event', tabs, (to) => publish(b, to, 2, `r${r}-2`));
  await phase('twMarkSent, second', tabs, (to) => a.markSent(to, ids.get(to)!));
  // The answer of a publish timed out: the node offers it again with its key.
  await phase('twPublish, retried key', tabs, (to) => b.publish(to, event(2), now, undefined, `r${r}-2`));
  // The rolling re-hold (the keeper's slices over the node's own tabs).
  now += 10_000;
  {
    const before = await read();
    for (let i = 0; i < tabs.length; i += 1_000) await a.refresh(tabs.slice(i, i + 1_000).map((to) => ({ to, connectedUntil: Number.MAX_SAFE_INTEGER })), 'node-a', now);
    costs.set('twHold, re-hold', costBetween(before, await read(), tabs.length));
  }
  // Past the age bound: the next event trims the earlier two and forgets their keys.
  now += BOUNDS.maxAgeMs;
  await phase('twPublish, after the age bound', tabs, (to) => publish(b, to, 3, `r${r}-3`));
  await phase('twRead, resume', tabs, (to) => a.read(to, ids.get(to)! - 1, now));
  // A busy tab: events beyond the count bound push the oldest out (their keys kept, :kt).
  for (let n = 0; n < BOUNDS.limit; n++) await inBatches(full, (to) => publish(b, to, 100 + n, `r${r}-f${n}`));
  const extra = 20;
  await phase('twPublish, full stream', full, async (to) => {
    for (let n = 0; n < extra; n++) await publish(b, to, 1_000 + n, `r${r}-x${n}`);
  }, extra);
  await phase('twRead, full stream', full, (to) => a.read(to, undefined, now));
  // The page left: its node lowers its connected time.
  await phase('twHold, detach', tabs, (to) => a.hold(to, 'node-a', now, now));
  return costs;
}

const fmt = (n: number, digits = 1) => n.toFixed(digits);

/** Nodes at once in the concurrent logins, and how long each level runs. */
const NODES_AT_ONCE = [1, 16, 64] as const;
const CONCURRENT_MS = 3_000;
/** Tabs each node holds for the concurrent logins (a tab's stream stays under its count bound). */
const TABS_PER_NODE = 200;

/**
 * Logins from `brokers.length` nodes at once for CONCURRENT_MS: node i's tabs get events published by node i+1
 * (announced to node i, which is subscribed), and node i marks each sent, one login after another per node.
 * Resolves Redis's CPU per login and logins a second.
 */
async function concurrentLogins(read: () => Promise<Reading>, brokers: readonly RedisBroker[], label: string): Promise<{ micros: number; rate: number }> {
  const now = Date.now();
  const tabsOf = brokers.map((_, i) => Array.from({ length: TABS_PER_NODE }, (_, k): TabAddress => ({ session: `${label}-${i}`.padEnd(64, 's'), tabId: `tab-${k}` })));
  await Promise.all(brokers.map((broker, i) => inBatches(tabsOf[i]!, (to) => broker.hold(to, `node-${i}`, Number.MAX_SAFE_INTEGER, now))));
  let logins = 0;
  const before = await read();
  const started = performance.now();
  const end = started + CONCURRENT_MS;
  await Promise.all(
    brokers.map(async (holder, i) => {
      const publisher = brokers[(i + 1) % brokers.length]!;
      for (let n = 0; performance.now() < end; n++) {
        const to = tabsOf[i]![n % TABS_PER_NODE]!;
        const outcome = await publisher.publish(to, event(n), now, undefined, `${label}-${i}-${n}`);
        await holder.markSent(to, outcome.frame!.id);
        logins++;
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const cost = costBetween(before, await read(), logins);
  return { micros: cost.cpuMicros / logins, rate: logins / seconds };
}

async function main(): Promise<void> {
  console.log(`broker-script-cost: ${TABS} tabs, ${ROUNDS} rounds, ${revision()}`);
  console.log(machineLine());
  const redis = await startBenchRedis();
  const connections: RedisConnection[] = [];
  const cpuReader = new Redis(redis.url, { maxRetriesPerRequest: 1 });
  // INFO is left out of the counts (startBenchRedis); its CPU is read before and after, a few µs a phase.
  const read = async (): Promise<Reading> => ({ redis: await redis.read(), cpu: await redisCpu(cpuReader) });
  try {
    const open = async (node: string) => {
      const connection = connectRedis(redis.url, silent, { prefix: 'bench:', name: `bench-${node}` });
      connections.push(connection);
      return RedisBroker.open(connection, BOUNDS, { node, log: silent });
    };
    const a = await open('node-a');
    const b = await open('node-b');
    // Every script once, so the rounds see EVALSHA only (ioredis loads a script with EVAL on its first NOSCRIPT).
    await round(read, a, b, 'warm', FULL_SHARE);
    const rounds: Map<string, PhaseCost>[] = [];
    for (let r = 0; r < ROUNDS; r++) rounds.push(await round(read, a, b, `round${r}`));
    console.log('');
    console.log('phase                              ops   inner/op  script µs/op  Redis CPU µs/op  inner commands per op');
    for (const name of rounds[0]!.keys()) {
      const all = rounds.map((c) => c.get(name)!);
      const ops = all[0]!.ops;
      const inner = median(all.map((c) => [...c.inner.values()].reduce((s, v) => s + v, 0) / c.ops));
      const byCommand = new Map<string, number>();
      for (const c of all) for (const [cmd, calls] of c.inner) byCommand.set(cmd, (byCommand.get(cmd) ?? 0) + calls / c.ops / all.length);
      const detail = [...byCommand].sort((x, y) => y[1] - x[1]).map(([cmd, n]) => `${cmd} ${fmt(n, 2)}`).join(', ');
      console.log(
        `${name.padEnd(32)} ${String(ops).padStart(6)}  ${fmt(inner, 2).padStart(8)}  ${fmt(median(all.map((c) => c.scriptMicros / c.ops)), 2).padStart(12)}  ${fmt(median(all.map((c) => c.cpuMicros / c.ops))).padStart(15)}  ${detail}`,
      );
    }
    console.log('');
    console.log('a login\'s two calls (twPublish from another node, twMarkSent on the tab\'s node), nodes at once, each its own connection:');
    console.log('nodes  logins/s  Redis CPU µs/login (median of rounds)');
    for (const count of NODES_AT_ONCE) {
      const brokers = [a, ...(await Promise.all(Array.from({ length: count - 1 }, (_, i) => open(`node-c${count}-${i}`))))];
      for (const broker of brokers) broker.subscribe(() => undefined);
      const results = [];
      for (let r = 0; r < ROUNDS; r++) results.push(await concurrentLogins(read, brokers, `c${count}r${r}`));
      console.log(`${String(count).padStart(5)}  ${fmt(median(results.map((x) => x.rate)), 0).padStart(8)}  ${fmt(median(results.map((x) => x.micros))).padStart(10)}`);
    }
  } finally {
    cpuReader.disconnect();
    await Promise.all(connections.map((c) => c.close()));
    await redis.stop();
  }
}

await main();
