import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePort } from './service.js';
import { runToEnd, spawnWatched, terminate } from './child.js';
import { DEADLINE_MS, until } from './until.js';

/** A node address as ioredis's `Cluster` takes its seeds. */
export interface RedisClusterSeed {
  host: string;
  port: number;
}

/**
 * A private Redis Cluster: one `redis-server --cluster-enabled yes` per node on loopback, each a foreground
 * child of the test process in its own directory. By default primaries only (no replicas, so no fail-over):
 * node `i` is shard `i`, the i-th node given to `redis-cli --cluster create`, `seeds[i]`. With replicas, the
 * nodes after the primaries are replicas, which `redis-cli` assigns: ask the cluster (`CLUSTER NODES`) which
 * replica follows which primary.
 */
export interface RedisClusterServer {
  seeds: RedisClusterSeed[];
  /** `redis://127.0.0.1:<port>` per primary as created. */
  urls: string[];
  /** `redis://127.0.0.1:<port>` per node, primaries first, then replicas; node indexes below index this list. */
  nodeUrls: string[];
  /** SIGKILL node i, which stays down (a primary dying at an instant; its replica can then take over). */
  kill(i: number): Promise<void>;
  /** pid of each shard's server (undefined once stopped), for readings of its CPU in /proc. */
  pids(): (number | undefined)[];
  /** SIGSTOP shard i: its connections stay open and it answers nothing (a stall), until `resume(i)`. */
  pause(i: number): void;
  /** SIGCONT shard i after `pause(i)`: it runs what it was sent meanwhile. */
  resume(i: number): void;
  /**
   * SIGTERM shard i, wait for its exit, start it again on the same ports and directory (its nodes.conf
   * keeps its node id and slots; its keys are gone), and resolve once every node reports the cluster ok.
   */
  restart(i: number): Promise<void>;
  /** Stops every shard (SIGTERM, SIGKILL after 5 s), keeping their directories: connections are refused. */
  stopShards(): Promise<void>;
  /** Starts the stopped shards again on their ports and directories (slots kept, keys gone); resolves once ok. */
  startShards(): Promise<void>;
  /** Stops every shard (SIGTERM, SIGKILL after 5 s) and removes their directories. */
  stop(): Promise<void>;
}

interface Shard {
  port: number;
  dir: string;
  child: ChildProcess | undefined;
}

/** The Redis Cluster bus listens on the client port + 10000 (redis.io, "Redis cluster specification", "Cluster bus"). */
const BUS_PORT_OFFSET = 10_000;
/** All slots of a cluster (CRC16(key) mod 16384, Redis Cluster specification "Key distribution model"). */
const SLOTS = 16_384;

/**
 * Starts `shards` primaries (and `replicas` replicas of each), joins them with `redis-cli --cluster create …
 * --cluster-replicas <replicas>`, and resolves once every node reports `cluster_state:ok`, all 16384 slots
 * assigned and every node known.
 */
export async function startRedisCluster(shards = 3, options: { replicas?: 0 | 1 } = {}): Promise<RedisClusterServer> {
  const replicas = options.replicas ?? 0;
  const nodes: Shard[] = [];
  const server: RedisClusterServer = {
    seeds: [],
    urls: [],
    nodeUrls: [],
    async kill(i) {
      const node = nodeAt(nodes, i);
      if (node.child) await terminate(node.child, 'SIGKILL');
      node.child = undefined;
    },
    pids: () => nodes.map((n) => n.child?.pid),
    pause(i) {
      nodeAt(nodes, i).child?.kill('SIGSTOP');
    },
    resume(i) {
      nodeAt(nodes, i).child?.kill('SIGCONT');
    },
    async stopShards() {
      await Promise.all(
        nodes.map(async (node) => {
          node.child?.kill('SIGCONT');
          if (node.child) await terminate(node.child);
          node.child = undefined;
        }),
      );
    },
    async startShards() {
      for (const [i, node] of nodes.entries()) {
        if (node.child) continue;
        const child = await launch(node.port, node.dir);
        if (typeof child === 'string') throw new Error(`shard ${i} did not start again on port ${node.port}: ${child}`);
        node.child = child;
      }
      await untilClusterOk(nodes.map((n) => n.port));
    },
    async restart(i) {
      const node = nodeAt(nodes, i);
      node.child?.kill('SIGCONT');
      if (node.child) await terminate(node.child);
      const child = await launch(node.port, node.dir);
      if (typeof child === 'string') throw new Error(`shard ${i} did not start again on port ${node.port}: ${child}`);
      node.child = child;
      await untilClusterOk(nodes.map((n) => n.port));
    },
    async stop() {
      await Promise.all(
        nodes.map(async (n) => {
          // A paused server would not act on SIGTERM.
          n.child?.kill('SIGCONT');
          if (n.child) await terminate(n.child);
          n.child = undefined;
          rmSync(n.dir, { recursive: true, force: true });
        }),
      );
    },
  };
  try {
    for (let i = 0; i < shards * (1 + replicas); i++) nodes.push(await launchNode());
    server.seeds = nodes.slice(0, shards).map((n) => ({ host: '127.0.0.1', port: n.port }));
    server.urls = server.seeds.map((n) => `redis://127.0.0.1:${n.port}`);
    server.nodeUrls = nodes.map((n) => `redis://127.0.0.1:${n.port}`);
    await createCluster(nodes.map((n) => n.port), replicas);
    await untilClusterOk(nodes.map((n) => n.port));
    if (replicas > 0) await untilReplicasUp(nodes.map((n) => n.port), shards * replicas);
  } catch (err) {
    await server.stop();
    throw err;
  }
  return server;
}

function nodeAt(nodes: readonly Shard[], i: number): Shard {
  const node = nodes[i];
  if (!node) throw new Error(`no shard ${i} (the cluster has ${nodes.length})`);
  return node;
}

/** Whether nothing listens on the loopback port now (a bind that succeeds and is released at once). */
function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(false));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
  });
}

/** Whether a Redis on the loopback port answers `PING` now. */
function answersPing(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    let reply = '';
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1_000, () => done(false));
    socket.once('error', () => done(false));
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.on('data', (chunk: Buffer) => {
      reply += chunk.toString();
      if (reply.includes('\r\n')) done(reply.startsWith('+PONG'));
    });
  });
}

/** A free client port whose bus port (port + 10000) is free too; both can still be taken before Redis binds them. */
async function freeClusterPort(): Promise<number> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = await freePort();
    if (port + BUS_PORT_OFFSET <= 65_535 && (await bindable(port + BUS_PORT_OFFSET))) return port;
  }
  throw new Error('no free port p with p + 10000 also free after 100 tries');
}

/** Starts one cluster-enabled node; picks new ports and starts again when another process took them first. */
async function launchNode(): Promise<Shard> {
  let failures = '';
  for (let attempt = 0; attempt < 5; attempt++) {
    const port = await freeClusterPort();
    const dir = mkdtempSync(join(tmpdir(), 'tabwire-rcluster-'));
    const child = await launch(port, dir);
    if (typeof child !== 'string') return { port, dir, child };
    rmSync(dir, { recursive: true, force: true });
    failures += `\n- port ${port}: ${child}`;
  }
  throw new Error(`redis-server (cluster-enabled) did not start:${failures}`);
}

/** The running child, or why it exited (e.g. one of its two ports was taken between the probe and its bind). */
async function launch(port: number, dir: string): Promise<ChildProcess | string> {
  const args = [
    '--cluster-enabled', 'yes',
    '--cluster-config-file', 'nodes.conf',
    '--cluster-node-timeout', '2000',
    '--port', String(port),
    '--save', '',
    '--appendonly', 'no',
    '--bind', '127.0.0.1',
    // nodes.conf is written relative to the working directory, which `--dir` sets.
    '--dir', dir,
    '--daemonize', 'no',
  ];
  // If the test process dies without stop(), take Redis with it (best effort).
  const { child, output } = spawnWatched('redis-server', args);
  const deadline = Date.now() + 15_000;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) return `exited (${child.exitCode ?? child.signalCode}): ${output()}`;
    // A PONG, not just an accepted connection: the kernel accepts on the client port as soon as it is
    // bound, which may be before the bus port's bind fails; Redis answers only once both are its own.
    if (await answersPing(port)) return child;
    if (Date.now() > deadline) {
      await terminate(child);
      throw new Error(`redis-server did not open port ${port}: ${output()}`);
    }
    await new Promise((r) => setTimeout(r, 25));
  }
}

async function createCluster(ports: readonly number[], replicas: number): Promise<void> {
  const args = ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', String(replicas), '--cluster-yes'];
  const { code, stdout, stderr } = await runToEnd('redis-cli', args, { PATH: process.env.PATH ?? '/usr/bin:/bin' });
  if (code !== 0 || !stdout.includes('All 16384 slots covered')) {
    throw new Error(`redis-cli --cluster create failed (${code}):\n${stdout}\n${stderr}`);
  }
}

/** The `field:value` lines of `CLUSTER INFO` as a map. */
function parseInfo(info: string): Map<string, string> {
  return new Map(
    info
      .split('\r\n')
      .map((line) => line.split(':'))
      .filter((parts): parts is [string, string] => parts.length === 2)
      .map(([k, v]) => [k, v]),
  );
}

/**
 * Polls until every node's `CLUSTER NODES` names `count` replicas, each following a primary, and every
 * replica's link to its primary is up (gossip tells the other nodes of a replica a moment after it is made one).
 */
async function untilReplicasUp(ports: readonly number[], count: number): Promise<void> {
  const clients = ports.map((port) => new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 1, commandTimeout: 5_000 }));
  try {
    await until(
      async () => {
        const views = await Promise.all(
          clients.map(async (client) => {
            const lines = String(await client.call('CLUSTER', 'NODES')).trim().split('\n');
            const replicas = lines.filter((line) => line.split(' ')[2]!.includes('slave') && line.split(' ')[3] !== '-').length;
            const info = String(await client.call('INFO', 'replication'));
            return replicas === count && (!/^role:slave/m.test(info) || /^master_link_status:up/m.test(info));
          }),
        );
        return views.every(Boolean);
      },
      `${count} replicas known to every node, each linked to its primary`,
      DEADLINE_MS,
    );
  } finally {
    clients.forEach((c) => c.disconnect());
  }
}

/** Polls `CLUSTER INFO` on every node until each says ok, with all slots assigned and all nodes known. */
async function untilClusterOk(ports: readonly number[]): Promise<void> {
  const clients = ports.map((port) => new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 1, commandTimeout: 5_000 }));
  const last = new Map<number, string>();
  try {
    await until(
      async () => {
        const states = await Promise.all(
          clients.map(async (client, i) => {
            const raw = await (client.call('CLUSTER', 'INFO') as Promise<string>).catch((err: Error) => `error:${err.message}`);
            last.set(ports[i]!, raw);
            const info = parseInfo(raw);
            return info.get('cluster_state') === 'ok' && info.get('cluster_slots_assigned') === String(SLOTS) && info.get('cluster_known_nodes') === String(ports.length);
          }),
        );
        return states.every(Boolean);
      },
      'cluster_state:ok with all slots assigned on every node',
      DEADLINE_MS,
    ).catch((err: Error) => {
      const seen = [...last].map(([port, info]) => `${port}: ${info.split('\r\n').slice(0, 7).join(' ')}`).join('\n');
      throw new Error(`${err.message}\n${seen}`);
    });
  } finally {
    clients.forEach((c) => c.disconnect());
  }
}
