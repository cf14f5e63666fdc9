/**
 * Cluster benchmark: tabwire nodes on a shared PostgreSQL and Redis next to one embedded node (SQLite,
 * memory broker), all in one run on this machine. It starts its own PostgreSQL 15 and Redis on loopback
 * (bench/lib/processes/postgres.ts, bench/lib/processes/redis.ts), the nodes as child processes
 * (bench/servers/channel-tabwire.ts, via bench/lib/cluster/nodes.ts) and the waiting pages in their own
 * processes (bench/servers/cluster-clients.ts, one per node: one process may hold only ~20,000 open files).
 * This file runs the two sides in order; each measurement phase has its module in bench/lib/ (cluster-tabs,
 * cluster-deliver, cluster-logins, cluster-qr). It reports:
 *
 *   1. signature POST -> SignatureReceived at the tab's WebSocket (and hub.deliver -> frame), with the tab
 *      on node A and the code issued and signed on node B, next to the same on one embedded node;
 *   2. idle tabs held by 2 cluster nodes, each near its open-file cap, and RSS per tab, next to one node;
 *   3. QR issuance (`POST /QuickLogin`, text mode, the reference page's request) spread over 2 cluster
 *      nodes vs 1 cluster node, and on the embedded node;
 *   4. what each costs Redis and PostgreSQL: commands and statements per Register, QR request, login and
 *      idle tab, and the CPU of every process, for a paper estimate (docs/capacity-estimate.md).
 *
 * See docs/benchmarks.md#cluster. BENCH_CLUSTER_TABS sets the tabs per node (default 19,000). BENCH_REDIS_CLUSTER=N
 * puts the cluster side's event streams, presence and announcements on a Redis Cluster of N primaries
 * (bench/lib/processes/redis-cluster.ts); Redis's figures then count the one Redis and every shard.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { systemClock } from '../src/clock.js';
import { loadConfig } from '../src/config/load.js';
import { ensureDevIdentity } from '../src/identity/dev-identity.js';
import { openStore } from '../src/store/open.js';
import { freePort } from './lib/processes/child.js';
import { OTHER_CPU_LIMIT, expect, ownCpu, waitForQuiet, waitUntil } from './lib/common.js';
import { deliverMeasured } from './lib/cluster/deliver.js';
import { logins } from './lib/cluster/logins.js';
import { Meter, type Probe } from './lib/cluster/meter.js';
import { connected, refreshesOf, startNode, stopNodes, type NodeRig } from './lib/cluster/nodes.js';
import { startBenchPostgres, type BenchPostgres } from './lib/processes/postgres.js';
import { qrLoad } from './lib/cluster/qr.js';
import { pingRedis, startBenchRedis, type BenchRedis } from './lib/processes/redis.js';
import { clusterShardsFromEnv, redisFleet, startBenchRedisCluster, type BenchRedisCluster, type RedisFleet } from './lib/processes/redis-cluster.js';
import { build } from './lib/cluster/report.js';
import { IDLE_MS, LOGIN_WARMUP, LOGINS, MAX_RETRIES, NO_PERIODIC_BINDING_REFRESH, QR, QR_LIMITS, TABS, type QrRound, type Side } from './lib/cluster/settings.js';
import { readRouting, routingDelta, type RoutingRun } from './lib/cluster/routing.js';
import { holdTabs } from './lib/cluster/tabs.js';
import { fetchOnce } from './lib/load/load.js';
import { procCpuMicros } from './lib/measure/proc-cpu.js';
import { QuietPolicy } from './lib/measure/quiet.js';
import { inScratchDir } from './lib/measure/scratch-dir.js';
import type { BenchReport, Benchmark } from './lib/measure/types.js';

/** The embedded node's side: SQLite and the memory broker, one node; Redis and PostgreSQL idle, counted as ours. */
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
    const node = await startNode('embedded node', { port, sqliteFile, ...QR_LIMITS, ...NO_PERIODIC_BINDING_REFRESH }, origin, 'e-');
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

/** The cluster's side: nodes A and B on the shared PostgreSQL and Redis, every phase, then the embedded node's load spread over both. */
async function clusterSide(dir: string, pg: BenchPostgres, redis: BenchRedis, streams: BenchRedisCluster | undefined, fleet: RedisFleet, quiet: QuietPolicy): Promise<Side> {
  const portA = await freePort();
  const portB = await freePort();
  // Every node of a cluster serves the same public address (the load balancer's); here node A's.
  const publicBaseUrl = `http://127.0.0.1:${portA}`;
  const shared = { databaseUrl: pg.url, redisUrl: redis.url, ...(streams ? { redisClusterUrls: streams.urls } : {}), publicBaseUrl, ...QR_LIMITS, ...NO_PERIODIC_BINDING_REFRESH };
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
      { name: 'redis', cpu: () => fleet.cpuMicros() },
      { name: 'postgres', cpu: () => pg.cpuMicros() },
    ];
    const meter = new Meter(probes, fleet, pg, [portA, portB]);
    const held = await holdTabs(nodes, meter);
    // Idle: nothing but pings and the nodes' presence refreshes. Its rates are what every later window
    // subtracts, so nothing of the benchmark's own runs in it: the Redis PINGs that show stalls come after, in
    // a window of their own (they cost Redis ~17 ms of CPU a second here, as much as the idle nodes).
    const routedIdle0 = await readRouting(nodes);
    const closeIdle = await meter.open();
    await sleep(IDLE_MS);
    const idle = await closeIdle();
    const routedIdle = routingDelta(routedIdle0, await readRouting(nodes));
    const redisPing = await pingRedis(redis.url, IDLE_MS);
    // The binding refresh (every 150 s per node), once on node A, on its own.
    const closeRefresh = await meter.open();
    const refreshed = JSON.parse((await fetchOnce(portA, 'POST', '/__bench/binding-refresh')).body.toString()) as { ms: number; tabs: number };
    await sleep(500);
    const bindingRefresh = { ...refreshed, window: await closeRefresh() };
    // From here to the end of the logins every event is for a tab on node A: node B should be sent none.
    const routed0 = await readRouting(nodes);
    const routedStart = performance.now();
    const deliver = await deliverMeasured(b, a, meter, quiet, nodes);
    const deliverLocal = await deliverMeasured(a, a, meter, quiet, nodes);
    const login = await logins(a, b, publicBaseUrl, signer, meter);
    const routing: RoutingRun = {
      crossNodeEvents: deliver.sent + login.logins,
      localEvents: deliverLocal.sent,
      ms: performance.now() - routedStart,
      received: routingDelta(routed0, await readRouting(nodes)),
      idleMs: idle.ms,
      idle: routedIdle,
    };
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
      routing,
      sameLoad,
      qr,
      closedByServer: closed,
      nodeNames: ['node A', 'node B'],
    };
  } finally {
    await stopNodes(nodes);
  }
}

/** The `cluster` benchmark (npm run bench -- cluster): both sides, then one report comparing them. */
export const cluster: Benchmark = {
  name: 'cluster',
  description: 'cluster mode (PostgreSQL + Redis, 2 nodes) vs one embedded node: event latency, idle tabs, QR issuance, Redis/PostgreSQL cost',
  async run(): Promise<BenchReport> {
    return inScratchDir(async (dir) => {
      let pg: BenchPostgres | undefined;
      let redis: BenchRedis | undefined;
      let streams: BenchRedisCluster | undefined;
      try {
        const idleBefore = await waitForQuiet();
        pg = await startBenchPostgres();
        redis = await startBenchRedis();
        const shards = clusterShardsFromEnv();
        if (shards > 0) streams = await startBenchRedisCluster(shards);
        const fleet = redisFleet(redis, streams);
        const pgVersion = /PostgreSQL\)\s+(\S+)/.exec(execFileSync('/usr/lib/postgresql/15/bin/postgres', ['--version'], { encoding: 'utf8' }))?.[1] ?? '?';
        const redisVersion = /v=(\S+)/.exec(execFileSync('redis-server', ['--version'], { encoding: 'utf8' }))?.[1] ?? '?';
        const quiet = new QuietPolicy(OTHER_CPU_LIMIT, MAX_RETRIES);
        const p = pg;
        // Redis and PostgreSQL idle during the embedded part, but their CPU is ours, not "other".
        const infraProbes: Probe[] = [
          { name: 'redis', cpu: () => fleet.cpuMicros() },
          { name: 'postgres', cpu: () => p.cpuMicros() },
        ];
        const embedded = await embeddedSide(dir, infraProbes, quiet);
        const clustered = await clusterSide(dir, pg, redis, streams, fleet, quiet);
        const title = shards > 0 ? `${cluster.description}; cluster side's event streams on a Redis Cluster of ${shards} primaries` : cluster.description;
        return { title, ...build(embedded, clustered, { pgVersion, redisVersion, redisShards: shards }, idleBefore) };
      } finally {
        await streams?.stop();
        await redis?.stop();
        await pg?.stop();
      }
    });
  },
};
