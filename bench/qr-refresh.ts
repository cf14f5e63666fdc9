/**
 * QR refresh benchmark: what a waiting page's refresh costs, a refresh being a tab that has asked for a code
 * before asking again with the same parameters (`POST /QuickLogin {serviceId:'', tab, mode:'text', purpose}`,
 * its own session cookie) and answered by the node that holds the tab. In one run on this machine:
 *
 *   - a bare Fastify JSON route (bench/servers/bare.ts) given the same request bytes;
 *   - the embedded node (SQLite, memory broker) holding REFRESH_TABS waiting tabs;
 *   - a cluster of two nodes on a private PostgreSQL and Redis, node A holding REFRESH_TABS tabs and
 *     answering their refreshes, node B beside it holding none.
 *
 * Rounds of each are taken in turn, each load round beside an idle window of the same length (the same tabs
 * connected, no refreshes), so what a refresh costs is told apart from what runs anyway (pings, presence
 * heartbeats, background reconciliation). Every server's CPU is read from /proc (all threads); Redis's
 * commands from INFO commandstats (commands inside scripts included), PostgreSQL's statements from
 * pg_stat_statements. The servers are child processes on loopback ports, stopped by pid. See
 * docs/benchmarks.md#qr-refresh.
 */
import { join } from 'node:path';
import { loadConfig } from '../src/config/load.js';
import { SERVICE_NODE_FLAGS } from '../src/node-flags.js';
import { openStore } from '../src/store/open.js';
import { expect, ownCpu, waitForQuiet } from './lib/common.js';
import { Meter, type Probe } from './lib/cluster/meter.js';
import { startNode, stopNodes, type NodeRig } from './lib/cluster/nodes.js';
import { NO_PERIODIC_BINDING_REFRESH, PURPOSE, QR_LIMITS } from './lib/cluster/settings.js';
import { tabIdOf } from './lib/load/channel-ids.js';
import { fetchOnce } from './lib/load/load.js';
import { freePort, startChild, type ChildServer } from './lib/processes/child.js';
import { procCpuMicros } from './lib/measure/proc-cpu.js';
import { startBenchPostgres, type BenchPostgres } from './lib/processes/postgres.js';
import { startBenchRedis, type BenchRedis } from './lib/processes/redis.js';
import { inScratchDir } from './lib/measure/scratch-dir.js';
import type { BenchReport, Benchmark } from './lib/measure/types.js';
import { checkBareAnswer, checkQrAnswer, idleRound, loadRound, refreshRequests, type TabCookie } from './lib/refresh/rounds.js';
import { build } from './lib/refresh/report.js';
import { FIRST_PASS_MS, REFRESH_TABS, ROUNDS, type RefreshRound } from './lib/refresh/settings.js';

/** Opens REFRESH_TABS registered tabs on `node` and answers their ids and cookies. */
async function openTabs(node: NodeRig): Promise<TabCookie[]> {
  const opened = await node.clients.call<{ opened: number; failed: number; firstError?: string }>('open', { from: 0, to: REFRESH_TABS, concurrency: 100 }, 300_000);
  expect(opened.failed === 0 && opened.opened === REFRESH_TABS, `${node.name}: ${opened.failed} of ${REFRESH_TABS} tabs failed to open; first: ${opened.firstError}`);
  const cookies = await node.clients.call<string[]>('cookies', { from: 0, to: REFRESH_TABS });
  return cookies.map((cookie, i) => ({ tab: tabIdOf(node.prefix, i), cookie }));
}

/** The cluster's schema, made once before its nodes start (as bench/cluster.ts does). */
async function migrate(dir: string, pg: BenchPostgres, redis: BenchRedis, port: number): Promise<void> {
  const config = loadConfig({}, { port, sqliteFile: join(dir, 'unused.sqlite'), logLevel: 'silent', databaseUrl: pg.url, redisUrl: redis.url, publicBaseUrl: `http://127.0.0.1:${port}` });
  const store = await openStore(config);
  await store.close();
}

export const qrRefresh: Benchmark = {
  name: 'qr-refresh',
  description: 'a waiting page refreshing its QR code: embedded node vs a bare Fastify route, cluster node vs embedded, Redis commands and SQL statements per refresh',
  async run(): Promise<BenchReport> {
    return inScratchDir(async (dir) => {
      let pg: BenchPostgres | undefined;
      let redis: BenchRedis | undefined;
      let bare: ChildServer | undefined;
      const nodes: NodeRig[] = [];
      try {
        const idleBefore = await waitForQuiet();
        pg = await startBenchPostgres();
        redis = await startBenchRedis();
        const barePort = await freePort();
        bare = await startChild('bare fastify', new URL('./servers/bare.ts', import.meta.url), [String(barePort)]);
        const bareServer = bare;

        const ePort = await freePort();
        const eOrigin = `http://127.0.0.1:${ePort}`;
        const embedded = await startNode('embedded node', { port: ePort, sqliteFile: join(dir, 'embedded.sqlite'), ...QR_LIMITS, ...NO_PERIODIC_BINDING_REFRESH }, eOrigin, 'e-', SERVICE_NODE_FLAGS);
        nodes.push(embedded);

        const portA = await freePort();
        const portB = await freePort();
        // Every node of a cluster serves the load balancer's address; here node A's.
        const cOrigin = `http://127.0.0.1:${portA}`;
        await migrate(dir, pg, redis, portA);
        const shared = { databaseUrl: pg.url, redisUrl: redis.url, publicBaseUrl: cOrigin, ...QR_LIMITS, ...NO_PERIODIC_BINDING_REFRESH };
        const a = await startNode('cluster node A', { port: portA, sqliteFile: join(dir, 'a.sqlite'), ...shared }, cOrigin, 'ca-', SERVICE_NODE_FLAGS);
        nodes.push(a);
        const b = await startNode('cluster node B', { port: portB, sqliteFile: join(dir, 'b.sqlite'), ...shared }, cOrigin, 'cb-', SERVICE_NODE_FLAGS);
        nodes.push(b);

        const eTabs = await openTabs(embedded);
        const aTabs = await openTabs(a);
        const eRequests = refreshRequests(eTabs, ePort, eOrigin, PURPOSE);
        const aRequests = refreshRequests(aTabs, portA, cOrigin, PURPOSE);
        // The bare route parses the embedded node's request bytes, on its own path and port.
        const bareRequests = refreshRequests(eTabs, barePort, eOrigin, PURPOSE, '/bare');
        const probe = await fetchOnce(barePort, 'POST', '/bare', { mode: 'text' });
        expect(probe.status === 200, `POST /bare answered ${probe.status}`);

        const r = redis;
        const p = pg;
        const infra: Probe[] = [
          { name: 'redis', cpu: () => procCpuMicros(r.pid) },
          { name: 'postgres', cpu: () => p.cpuMicros() },
          { name: 'bench', cpu: ownCpu },
        ];
        const meters = {
          bare: new Meter([{ name: 'server', cpu: () => procCpuMicros(bareServer.pid) }, ...infra], undefined, undefined, []),
          embedded: new Meter([{ name: 'server', cpu: () => procCpuMicros(embedded.server.pid) }, ...infra], undefined, undefined, []),
          cluster: new Meter(
            [{ name: 'server', cpu: () => procCpuMicros(a.server.pid) }, { name: 'node B', cpu: () => procCpuMicros(b.server.pid) }, ...infra],
            redis,
            pg,
            [portA, portB],
          ),
        };
        // Every tab's first request (its request stored) and V8's warm-up, on every server, uncounted.
        await loadRound('bare', meters.bare, barePort, bareRequests, checkBareAnswer, 500, FIRST_PASS_MS);
        await loadRound('embedded', meters.embedded, ePort, eRequests, checkQrAnswer, 500, FIRST_PASS_MS);
        await loadRound('cluster', meters.cluster, portA, aRequests, checkQrAnswer, 500, FIRST_PASS_MS);

        const rounds: RefreshRound[] = [];
        const idle: RefreshRound[] = [];
        for (let round = 0; round < ROUNDS; round++) {
          rounds.push(await loadRound('bare', meters.bare, barePort, bareRequests, checkBareAnswer));
          idle.push(await idleRound('embedded', meters.embedded));
          rounds.push(await loadRound('embedded', meters.embedded, ePort, eRequests, checkQrAnswer));
          idle.push(await idleRound('cluster', meters.cluster));
          rounds.push(await loadRound('cluster', meters.cluster, portA, aRequests, checkQrAnswer));
        }
        return { title: qrRefresh.description, ...build({ rounds, idle, idleBefore }) };
      } finally {
        await stopNodes(nodes);
        await bare?.stop();
        await redis?.stop();
        await pg?.stop();
      }
    });
  },
};
