/**
 * Cluster benchmark: tabwire nodes on a shared PostgreSQL and Redis next to one embedded node (SQLite,
 * memory broker), all in one run on this machine. It starts its own PostgreSQL 15 and Redis on loopback
 * (bench/lib/cluster-infra.ts), the nodes as child processes (bench/servers/channel-tabwire.ts) and the
 * waiting pages in their own processes (bench/servers/cluster-clients.ts, one per node: one process may
 * hold only ~20,000 open files). It reports:
 *
 *   1. signature POST -> SignatureReceived at the tab's WebSocket (and hub.deliver -> frame), with the tab
 *      on node A and the code issued and signed on node B, next to the same on one embedded node;
 *   2. idle tabs held by 2 cluster nodes, each near its open-file cap, and RSS per tab, next to one node;
 *   3. QR issuance (`POST /QuickLogin`, text mode, the reference page's request) spread over 2 cluster
 *      nodes vs 1 cluster node, and on the embedded node;
 *   4. what each costs Redis and PostgreSQL: commands and statements per Register, QR request, login and
 *      idle tab, and the CPU of every process, for a paper estimate (docs/capacity-estimate.md).
 *
 * See docs/benchmarks.md "Cluster". BENCH_CLUSTER_TABS sets the tabs per node (default 19,000).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';
import { systemClock } from '../src/clock.js';
import { loadConfig } from '../src/config/load.js';
import { ensureDevIdentity, type DevIdentity } from '../src/identity/dev-identity.js';
import { signEd25519 } from '../src/identity/keys.js';
import { signedMessage } from '../src/quicklogin/challenge.js';
import { openStore } from '../src/store/open.js';
import { freePort, startChild, type ChildServer } from './lib/child.js';
import { OTHER_CPU_LIMIT, expect, openFilesLimit, ownCpu, requireOpenFiles, settledRss, waitForQuiet, waitUntil } from './lib/channel-common.js';
import { startWorker, type Worker } from './lib/channel-worker.js';
import { tabIdOf } from './lib/channel-ids.js';
import { pingRedis, procCpuMicros, startBenchPostgres, startBenchRedis, type BenchPostgres, type BenchRedis } from './lib/cluster-infra.js';
import { Meter, type Probe, type Window } from './lib/cluster-meter.js';
import { build } from './lib/cluster-report.js';
import {
  FD_MARGIN,
  IDLE_MS,
  LOGIN_RATE,
  LOGIN_WARMUP,
  LOGINS,
  MAX_RETRIES,
  NO_PERIODIC_BINDING_REFRESH,
  OPEN_CONCURRENCY,
  PER_SECOND,
  PING_MS,
  PURPOSE,
  QR,
  QR_FROM,
  QR_TABS,
  TABS,
  TARGETS,
  EVENTS,
  WARMUP_EVENTS,
  WARMUP_TABS,
  type DeliverRun,
  type LatencySummary,
  type LoginRun,
  type LoopReading,
  type QrRound,
  type Side,
} from './lib/cluster-settings.js';
import { fetchOnce } from './lib/load.js';
import { runMultiLoad } from './lib/multi-load.js';
import { QuietPolicy } from './lib/quiet.js';
import { percentile } from './lib/stats.js';
import type { BenchReport, Benchmark } from './lib/types.js';

type Opened = { opened: number; failed: number; firstError?: string; ms: number; total: number };

/** One node and the process holding its tabs. */
interface NodeRig {
  name: string;
  server: ChildServer;
  clients: Worker;
  prefix: string;
}

async function connected(port: number): Promise<number> {
  return (JSON.parse((await fetchOnce(port, 'GET', '/__bench/stats')).body.toString()) as { hub: { connected: number } }).hub.connected;
}

async function startNode(name: string, args: Record<string, unknown>, origin: string, prefix: string): Promise<NodeRig> {
  const server = await startChild(name, new URL('./servers/channel-tabwire.ts', import.meta.url), [JSON.stringify(args)], { nodeArgs: ['--expose-gc'], readyTimeoutMs: 60_000 });
  requireOpenFiles(`${name} (pid ${server.pid})`, openFilesLimit(server.pid), TABS + FD_MARGIN);
  const clients = await startWorker(`${name} clients`, new URL('./servers/cluster-clients.ts', import.meta.url));
  requireOpenFiles(`${name} clients (pid ${clients.pid})`, clients.openFilesLimit, TABS + FD_MARGIN);
  await clients.call('setup', { port: server.port, origin, prefix, pingMs: PING_MS });
  return { name, server, clients, prefix };
}

/** Warm-up tabs, then the 0-tab memory reading, then TABS tabs on every node at once; then the settled reading. */
async function holdTabs(nodes: NodeRig[], meter: Meter): Promise<{ memory: Side['memory']; open: Side['open'] }> {
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

/** The presence refreshes the nodes ran: [start, end] on CLOCK_MONOTONIC (ns). */
async function refreshesOf(nodes: NodeRig[]): Promise<[bigint, bigint][]> {
  const all: [bigint, bigint][] = [];
  for (const n of nodes) {
    const list = JSON.parse((await fetchOnce(n.server.port, 'GET', '/__bench/refreshes')).body.toString()) as [string, string][];
    for (const [a, b] of list) all.push([BigInt(a), BigInt(b)]);
  }
  return all;
}

/** Resets the nodes' loop monitors; the function returned reads what they saw since. */
async function watchLoops(nodes: NodeRig[]): Promise<() => Promise<LoopReading[]>> {
  const read = async () =>
    Promise.all(nodes.map(async (n) => ({ node: n.name, ...(JSON.parse((await fetchOnce(n.server.port, 'GET', '/__bench/loop')).body.toString()) as Omit<LoopReading, 'node'>) })));
  await read();
  return read;
}

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

async function deliverMeasured(sender: NodeRig, holder: NodeRig, meter: Meter, quiet: QuietPolicy, cluster: NodeRig[] = []): Promise<DeliverRun> {
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

const jsonHeaders = (cookie: string, origin: string) => ({ accept: 'application/json', 'content-type': 'application/json', cookie, origin });

/**
 * Logins on tabs of `holder`, each code asked for and signed on `via`: first the codes (POST /QuickLogin,
 * the reference page's body, with the tab's cookie; counted as QR requests), then LOGIN_RATE logins a second
 * on a fixed schedule (GET the signUrl, sign its challenge, POST the signature). Latency: from just before the
 * signed POST is sent to SignatureReceived at the tab's WebSocket, both on CLOCK_MONOTONIC.
 */
async function logins(holder: NodeRig, via: NodeRig, origin: string, signer: DevIdentity, meter: Meter): Promise<LoginRun> {
  const nodes = holder === via ? [holder] : [holder, via];
  let loops: (() => Promise<LoopReading[]>) | undefined;
  const total = LOGIN_WARMUP + LOGINS;
  const cookies = await holder.clients.call<string[]>('cookies', { from: 0, to: total });
  const pool = new Pool(`http://127.0.0.1:${via.server.port}`, { connections: 16, headersTimeout: 10_000, bodyTimeout: 10_000 });
  try {
    const call = async (method: 'GET' | 'POST', path: string, headers: Record<string, string>, body?: unknown): Promise<Record<string, unknown>> => {
      const r = await pool.request({ method, path, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
      const text = await r.body.text();
      if (r.statusCode !== 200) throw new Error(`${method} ${path.replace(/[^/]{20,}$/, '{code}')} answered ${r.statusCode}: ${text.slice(0, 200)}`);
      return JSON.parse(text) as Record<string, unknown>;
    };
    // The codes: the reference page's request for its tab, with its session cookie.
    const paths: string[] = new Array<string>(total);
    let next = 0;
    const closeIssue = await meter.open();
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < total) {
          const k = next++;
          const qr = await call('POST', '/QuickLogin', jsonHeaders(cookies[k]!, origin), { serviceId: '', tab: tabIdOf(holder.prefix, k), mode: 'text', purpose: PURPOSE });
          paths[k] = new URL(qr.signUrl as string).pathname;
        }
      }),
    );
    const issued = { count: total, window: await closeIssue() };

    const signedAt = new Array<bigint>(total);
    const answered: number[] = [];
    let errors = 0;
    let firstError: string | undefined;
    const login = async (k: number): Promise<void> => {
      try {
        const info = await call('GET', paths[k]!, { accept: 'application/json' });
        const signature = signEd25519(signer.key, signedMessage(info.challenge as string, signer.legalId, 'approve'));
        const t = performance.now();
        signedAt[k] = process.hrtime.bigint();
        const answer = await call('POST', paths[k]!, { accept: 'application/json', 'content-type': 'application/json' }, { legalId: signer.legalId, signature, decision: 'approve' });
        if (k >= LOGIN_WARMUP) answered.push(performance.now() - t);
        if (answer.state !== 'approved') throw new Error(`signature answered ${JSON.stringify(answer)}`);
      } catch (err) {
        if (k >= LOGIN_WARMUP) {
          errors++;
          firstError ??= (err as Error).message;
        }
      }
    };
    const running: Promise<void>[] = [];
    let close: (() => Promise<Window>) | undefined;
    let t0 = performance.now();
    let started = 0;
    while (started < total) {
      if (started === LOGIN_WARMUP) {
        // The warm-up logins are answered first, so the measured window starts clean.
        await Promise.all(running);
        await sleep(500);
        await holder.clients.call('arrivals-reset');
        loops = await watchLoops(nodes);
        close = await meter.open();
        t0 = performance.now();
      }
      const base = started < LOGIN_WARMUP ? 0 : LOGIN_WARMUP;
      const due = Math.min(started < LOGIN_WARMUP ? LOGIN_WARMUP : total, base + Math.floor(((performance.now() - t0) * LOGIN_RATE) / 1000) + 1);
      while (started < due) running.push(login(started++));
      await sleep(2);
    }
    await Promise.all(running);
    const expected = LOGINS - errors;
    const arrivalsOf = async () => holder.clients.call<[string, string][]>('arrivals-read');
    await waitUntil(async () => (await arrivalsOf()).length >= expected, 10_000, 100);
    const window = await close!();
    const loopReadings = await loops!();
    // Where the signature path's time went on the node that took the signatures (printed as it is measured).
    const phases = JSON.parse((await fetchOnce(via.server.port, 'GET', '/__bench/phases')).body.toString()) as Record<string, number[]>;
    for (const [name, values] of Object.entries(phases)) {
      const sorted = [...values].sort((x, y) => x - y);
      const at = (q: number) => (sorted[Math.min(sorted.length - 1, Math.floor((q / 100) * sorted.length))] ?? 0).toFixed(2);
      console.log(`  phases on ${via.name}: ${name.padEnd(22)} n=${sorted.length} p50 ${at(50)} p90 ${at(90)} p99 ${at(99)} max ${at(100)} ms; over 20 ms: ${sorted.filter((v) => v > 20).length}`);
    }
    const arrived = new Map((await arrivalsOf()).map(([tab, at]) => [tab, BigInt(at)]));
    const latencies: number[] = [];
    let negative = 0;
    for (let k = LOGIN_WARMUP; k < total; k++) {
      const at = arrived.get(tabIdOf(holder.prefix, k));
      if (at === undefined || signedAt[k] === undefined) continue;
      const v = Number(at - signedAt[k]!) / 1e6;
      if (v < 0) negative++;
      latencies.push(v);
    }
    return {
      latency: { count: latencies.length, p50: percentile(latencies, 50), p90: percentile(latencies, 90), p99: percentile(latencies, 99), max: percentile(latencies, 100), negative },
      answer: { p50: percentile(answered, 50), p99: percentile(answered, 99) },
      logins: LOGINS,
      errors,
      firstError,
      missing: expected - latencies.length,
      issued,
      window,
      loops: loopReadings,
    };
  } finally {
    await pool.close();
  }
}

/** QR requests as the reference page sends them, for tabs of `owners`, spread over `targets`. */
async function qrLoad(label: string, owners: NodeRig[], targets: { port: number; connections: number }[], origin: string, meter: Meter): Promise<QrRound> {
  const pairs: { tab: string; cookie: string }[] = [];
  for (const owner of owners) {
    const cookies = await owner.clients.call<string[]>('cookies', { from: QR_FROM, to: QR_FROM + QR_TABS });
    cookies.forEach((cookie, k) => pairs.push({ tab: tabIdOf(owner.prefix, QR_FROM + k), cookie }));
  }
  const built = new Map<number, Buffer[]>();
  const requestsFor = (port: number): Buffer[] => {
    let list = built.get(port);
    if (!list) {
      list = pairs.map(({ tab, cookie }) => {
        const body = JSON.stringify({ serviceId: '', tab, mode: 'text', purpose: PURPOSE });
        const head = [
          'POST /QuickLogin HTTP/1.1',
          `Host: 127.0.0.1:${port}`,
          'Accept: */*',
          'Content-Type: application/json',
          `Origin: ${origin}`,
          `Referer: ${origin}/`,
          `Cookie: ${cookie}`,
          `Content-Length: ${Buffer.byteLength(body)}`,
        ].join('\r\n');
        return Buffer.from(`${head}\r\n\r\n${body}`, 'latin1');
      });
      built.set(port, list);
    }
    return list;
  };
  // Every request a different tab (in turn), so no session comes near its own limit.
  let close: (() => Promise<Window>) | undefined;
  let window: Window | undefined;
  const result = await runMultiLoad({
    targets,
    request: (i, port) => requestsFor(port)[i % pairs.length]!,
    expectStatus: 200,
    check: (body) => {
      const a = JSON.parse(body.toString()) as { text?: unknown; signUrl?: unknown };
      return typeof a.text === 'string' && typeof a.signUrl === 'string' ? undefined : 'answer without text/signUrl';
    },
    warmupMs: QR.warmupMs,
    durationMs: QR.durationMs,
    onWindow: {
      open: async () => {
        close = await meter.open();
      },
      close: async () => {
        window = await close!();
      },
    },
  });
  expect(result.errors === 0, `${label}: ${result.errors} failed QR requests, first: ${result.firstError}`);
  return { label, result, window: window! };
}

async function stopNodes(nodes: NodeRig[]): Promise<void> {
  for (const n of nodes) await n.clients.stop();
  for (const n of nodes) await n.server.stop();
}

async function embeddedSide(dir: string, redisPg: Probe[], quiet: QuietPolicy): Promise<Side> {
  const port = await freePort();
  const sqliteFile = join(dir, 'embedded.sqlite');
  const config = loadConfig({}, { port, sqliteFile, logLevel: 'silent' });
  const store = await openStore(config);
  const signer = await ensureDevIdentity(store, systemClock, config.legalDomain);
  await store.close();
  const origin = config.publicBaseUrl;
  const nodes: NodeRig[] = [];
  try {
    const node = await startNode('embedded node', { port, sqliteFile, qrRequestsPerAddressPerMinute: 10_000_000, ...NO_PERIODIC_BINDING_REFRESH }, origin, 'e-');
    nodes.push(node);
    const probes: Probe[] = [
      { name: 'node', cpu: () => procCpuMicros(node.server.pid) },
      { name: 'clients', cpu: () => procCpuMicros(node.clients.pid) },
      { name: 'bench', cpu: ownCpu },
      ...redisPg,
    ];
    const meter = new Meter(probes, undefined, undefined, []);
    const held = await holdTabs([node], meter);
    const closeIdle = await meter.open();
    await sleep(IDLE_MS);
    const idleWindow = await closeIdle();
    const deliver = await deliverMeasured(node, node, meter, quiet);
    const login = await logins(node, node, origin, signer, meter);
    const qr: QrRound[] = [];
    for (let r = 0; r < QR.rounds; r++) qr.push(await qrLoad('embedded node', [node], [{ port, connections: QR.connections }], origin, meter));
    const stats = await node.clients.call<{ unexpectedCloses: number }>('stats');
    return {
      name: 'embedded',
      memory: held.memory,
      open: held.open,
      idle: idleWindow,
      idleTabs: TABS,
      deliver,
      login,
      qr,
      closedByServer: stats.unexpectedCloses,
      nodeNames: ['node'],
    };
  } finally {
    await stopNodes(nodes);
  }
}

async function clusterSide(dir: string, pg: BenchPostgres, redis: BenchRedis, quiet: QuietPolicy): Promise<Side> {
  const portA = await freePort();
  const portB = await freePort();
  // Every node of a cluster serves the same public address (the load balancer's); here node A's.
  const publicBaseUrl = `http://127.0.0.1:${portA}`;
  const shared = { databaseUrl: pg.url, redisUrl: redis.url, publicBaseUrl, qrRequestsPerAddressPerMinute: 10_000_000, ...NO_PERIODIC_BINDING_REFRESH };
  const config = loadConfig({}, { port: portA, sqliteFile: join(dir, 'unused.sqlite'), logLevel: 'silent', ...shared });
  const store = await openStore(config);
  const signer = await ensureDevIdentity(store, systemClock, config.legalDomain);
  await store.close();
  const nodes: NodeRig[] = [];
  try {
    const a = await startNode('cluster node A', { port: portA, sqliteFile: join(dir, 'a.sqlite'), ...shared }, publicBaseUrl, 'ca-');
    nodes.push(a);
    const b = await startNode('cluster node B', { port: portB, sqliteFile: join(dir, 'b.sqlite'), ...shared }, publicBaseUrl, 'cb-');
    nodes.push(b);
    const probes: Probe[] = [
      { name: 'node A', cpu: () => procCpuMicros(a.server.pid) },
      { name: 'node B', cpu: () => procCpuMicros(b.server.pid) },
      { name: 'clients', cpu: () => procCpuMicros(a.clients.pid) + procCpuMicros(b.clients.pid) },
      { name: 'bench', cpu: ownCpu },
      { name: 'redis', cpu: () => procCpuMicros(redis.pid) },
      { name: 'postgres', cpu: () => pg.cpuMicros() },
    ];
    const meter = new Meter(probes, redis, pg, [portA, portB]);
    const held = await holdTabs(nodes, meter);
    // Idle: nothing but pings and the nodes' presence refreshes (and Redis PINGs from here, to see it stall).
    const closeIdle = await meter.open();
    const redisPing = await pingRedis(redis.url, IDLE_MS);
    const idle = await closeIdle();
    // The binding refresh (every 150 s per node), once on node A, on its own.
    const closeRefresh = await meter.open();
    const refreshed = JSON.parse((await fetchOnce(portA, 'POST', '/__bench/binding-refresh')).body.toString()) as { ms: number; tabs: number };
    await sleep(500);
    const bindingRefresh = { ...refreshed, window: await closeRefresh() };
    const deliver = await deliverMeasured(b, a, meter, quiet, nodes);
    const deliverLocal = await deliverMeasured(a, a, meter, quiet, nodes);
    const login = await logins(a, b, publicBaseUrl, signer, meter);
    const qr: QrRound[] = [];
    for (let r = 0; r < QR.rounds; r++) {
      qr.push(await qrLoad('1 cluster node (A)', [a, b], [{ port: portA, connections: QR.connections }], publicBaseUrl, meter));
      qr.push(
        await qrLoad('2 cluster nodes (A+B)', [a, b], [
          { port: portA, connections: QR.connections / 2 },
          { port: portB, connections: QR.connections / 2 },
        ], publicBaseUrl, meter),
      );
    }
    // The budget's comparison: the embedded node's workload (its TABS waiting tabs, the same logins)
    // spread over the two nodes, so both sides ask the same of this machine's two cores.
    const perNode = Math.min(TABS, Math.max(Math.ceil(TABS / 2), LOGIN_WARMUP + LOGINS));
    for (const n of nodes) await n.clients.call('close', { from: perNode, to: TABS }, 120_000);
    for (const n of nodes) {
      const settledAt = await waitUntil(async () => (await connected(n.server.port)) === perNode, 30_000, 200);
      expect(settledAt, `${n.name} still counts ${await connected(n.server.port)} tabs after closing down to ${perNode}`);
    }
    const sameLoad = { tabsPerNode: perNode, login: await logins(a, b, publicBaseUrl, signer, meter) };
    let closed = 0;
    for (const n of nodes) closed += (await n.clients.call<{ unexpectedCloses: number }>('stats')).unexpectedCloses;
    return {
      name: 'cluster',
      memory: held.memory,
      open: held.open,
      idle,
      redisPing,
      refreshMs: (await refreshesOf(nodes)).map(([start, end]) => Number(end - start) / 1e6),
      idleTabs: 2 * TABS,
      bindingRefresh,
      deliver,
      deliverLocal,
      login,
      sameLoad,
      qr,
      closedByServer: closed,
      nodeNames: ['node A', 'node B'],
    };
  } finally {
    await stopNodes(nodes);
  }
}

export const cluster: Benchmark = {
  name: 'cluster',
  description: 'cluster mode (PostgreSQL + Redis, 2 nodes) vs one embedded node: event latency, idle tabs, QR issuance, Redis/PostgreSQL cost',
  async run(): Promise<BenchReport> {
    const dir = mkdtempSync(join(tmpdir(), 'tabwire-bench-'));
    const removeDir = (): void => rmSync(dir, { recursive: true, force: true });
    process.once('exit', removeDir);
    let pg: BenchPostgres | undefined;
    let redis: BenchRedis | undefined;
    try {
      const idleBefore = await waitForQuiet();
      pg = await startBenchPostgres();
      redis = await startBenchRedis();
      const pgVersion = /PostgreSQL\)\s+(\S+)/.exec(execFileSync('/usr/lib/postgresql/15/bin/postgres', ['--version'], { encoding: 'utf8' }))?.[1] ?? '?';
      const redisVersion = /v=(\S+)/.exec(execFileSync('redis-server', ['--version'], { encoding: 'utf8' }))?.[1] ?? '?';
      const quiet = new QuietPolicy(OTHER_CPU_LIMIT, MAX_RETRIES);
      const p = pg;
      const r = redis;
      // Redis and PostgreSQL idle during the embedded part, but their CPU is ours, not "other".
      const infraProbes: Probe[] = [
        { name: 'redis', cpu: () => procCpuMicros(r.pid) },
        { name: 'postgres', cpu: () => p.cpuMicros() },
      ];
      const embedded = await embeddedSide(dir, infraProbes, quiet);
      const clustered = await clusterSide(dir, pg, redis, quiet);
      return { title: cluster.description, ...build(embedded, clustered, { pgVersion, redisVersion }, idleBefore) };
    } finally {
      await redis?.stop();
      await pg?.stop();
      process.off('exit', removeDir);
      removeDir();
    }
  },
};
