import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomInt } from 'node:crypto';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { Balancer } from './balancer.js';
import { runToEnd } from './child.js';
import { assertFreshBuild, kill } from './process.js';
import { postgresDatabase } from './backends.js';
import { startRedis, type RedisServer } from './redis.js';
import { SERVICE_NODE_FLAGS } from '../../src/node-flags.js';

/**
 * Several tabwire nodes as an operator runs them (docs/deployment.md): `dist/main.js` processes, foreground
 * children of the test process, stopped by pid, on one store and one Redis. Nodes are numbered from 0 here
 * (`nodes[0]` is "node 1" in test names). Each node logs to a file in the cluster's directory; a node that
 * fails to start names its log in the error.
 *
 * The store is a parameter: a PostgreSQL database (the default, as in a real cluster: a fresh database on
 * the test run's PostgreSQL, or on the server TABWIRE_TEST_CLUSTER_DATABASE_URL names) or, for a test that
 * asks for it, a SQLite file shared by the nodes (one machine only).
 */
export type ClusterStore = { sqliteFile: string } | { databaseUrl: string };

/** The store of a cluster whose test names none (see above). */
export async function clusterStore(_dir: string): Promise<ClusterStore> {
  const server = process.env.TABWIRE_TEST_CLUSTER_DATABASE_URL;
  if (server !== undefined && server !== '') return { databaseUrl: await freshDatabase(server) };
  return { databaseUrl: await postgresDatabase() };
}

/** Databases `freshDatabase` made, by URL, with the server URL to drop them from. */
const made = new Map<string, string>();

/** Creates an empty database on the server `url` names; returns the URL of the new one. */
async function freshDatabase(url: string): Promise<string> {
  const name = `tabwire_cluster_${randomBytes(6).toString('hex')}`;
  await onServer(url, `CREATE DATABASE ${name}`);
  const fresh = new URL(url);
  fresh.pathname = `/${name}`;
  made.set(fresh.toString(), url);
  return fresh.toString();
}

async function onServer(url: string, statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
}

/** Drops a database `freshDatabase` made (nothing else). */
async function dropMade(store: ClusterStore): Promise<void> {
  if (!('databaseUrl' in store)) return;
  const server = made.get(store.databaseUrl);
  if (server === undefined) return;
  made.delete(store.databaseUrl);
  await onServer(server, `DROP DATABASE IF EXISTS ${new URL(store.databaseUrl).pathname.slice(1)} WITH (FORCE)`);
}

/**
 * The environment that points a node (or the CLI) at the store. With a database URL the SQLite file is one
 * nobody can open (under /dev/null), so a build that ignored the URL would fail at start instead of passing
 * the tests on a SQLite file of its own.
 */
export const storeEnv = (store: ClusterStore): Record<string, string> =>
  'databaseUrl' in store
    ? { TABWIRE_DATABASE_URL: store.databaseUrl, TABWIRE_SQLITE_FILE: '/dev/null/no-sqlite-with-a-database-url' }
    : { TABWIRE_SQLITE_FILE: store.sqliteFile };

export interface ClusterOptions {
  nodes: number;
  /** TABWIRE_* settings of every node (beyond the store, Redis, port and instance id the harness sets). */
  env?: Record<string, string>;
  /** Settings of one node on top of `env` (by index from 0), e.g. a smaller outboxLimit. */
  nodeEnv?: (index: number) => Record<string, string>;
  /** Node.js options of one node before `dist/main.js`, e.g. `--import` of a fixture that holds it at an instant. */
  nodeArgs?: (index: number) => string[];
  store?: ClusterStore;
  /**
   * Put a round-robin balancer in front and make its URL every node's publicBaseUrl, as a deployment
   * behind a load balancer does (signUrls, cookies and challenges then name the balancer). Without it
   * each node's publicBaseUrl is its own address and the test picks the node of every request.
   */
  balanced?: boolean | { route?: (path: string) => number | undefined };
}

export interface ClusterNode {
  index: number;
  port: number;
  /** Where the test reaches the node directly. */
  baseUrl: string;
  wsUrl: string;
  /** The node's log file (stdout and stderr). */
  logFile: string;
  child: ChildProcess | undefined;
}

const canListen = (port: number) =>
  new Promise<boolean>((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });

/**
 * `count` consecutive free loopback ports below Linux's ephemeral range (32768-60999): a port from that range
 * may be taken by an outgoing connection between the check and the bind (or while a killed node restarts on
 * its port); these are not.
 */
export async function freePorts(count: number): Promise<number> {
  for (;;) {
    const base = randomInt(20_000, 32_000 - count);
    let free = true;
    for (let i = 0; i < count && free; i++) free = await canListen(base + i);
    if (free) return base;
  }
}

/** How long a node may take to answer /readyz (bounds a broken run only; the machine may be busy). */
const READY_MS = 60_000;

export class Cluster {
  private constructor(
    readonly dir: string,
    readonly redis: RedisServer,
    readonly store: ClusterStore,
    readonly nodes: ClusterNode[],
    private readonly env: Record<string, string>,
    private readonly nodeEnv: (index: number) => Record<string, string>,
    readonly balancer: Balancer | undefined,
    private readonly nodeArgs: (index: number) => string[] = () => [],
  ) {}

  /** Starts Redis, the balancer if asked for, and the nodes (in parallel); resolves once every node is ready. */
  static async start(o: ClusterOptions): Promise<Cluster> {
    assertFreshBuild();
    const dir = mkdtempSync(join(tmpdir(), 'tabwire-cluster-'));
    const redis = await startRedis();
    const store = o.store ?? (await clusterStore(dir));
    const balancer = o.balanced ? await Balancer.start([], typeof o.balanced === 'object' ? o.balanced : {}) : undefined;
    const env: Record<string, string> = {
      ...storeEnv(store),
      TABWIRE_REDIS_URL: redis.url,
      // One generation of one deployment: pages reload only when it changes (docs/events.md "Restarts").
      TABWIRE_INSTANCE_ID: 'cluster-test',
      TABWIRE_HOST: '127.0.0.1',
      TABWIRE_LOG_LEVEL: 'warn',
      ...(balancer ? { TABWIRE_PUBLIC_BASE_URL: balancer.url } : {}),
      ...o.env,
    };
    const nodes: ClusterNode[] = [];
    const first = await freePorts(o.nodes);
    for (let index = 0; index < o.nodes; index++) {
      const port = first + index;
      nodes.push({ index, port, baseUrl: `http://127.0.0.1:${port}`, wsUrl: `ws://127.0.0.1:${port}/ClientEventsWS`, logFile: join(dir, `node-${index + 1}.log`), child: undefined });
    }
    balancer?.setTargets(nodes.map((n) => `127.0.0.1:${n.port}`));
    const cluster = new Cluster(dir, redis, store, nodes, env, o.nodeEnv ?? (() => ({})), balancer, o.nodeArgs);
    try {
      // The first node migrates the store alone; the others start together once it is ready.
      if (nodes.length > 0) await cluster.launch(0);
      await Promise.all(nodes.slice(1).map((n) => cluster.launch(n.index)));
    } catch (err) {
      await cluster.stop();
      throw err;
    }
    return cluster;
  }

  /** The node's own URL (direct access, no balancer). */
  url(index: number): string {
    return this.node(index).baseUrl;
  }

  wsUrl(index: number): string {
    return this.node(index).wsUrl;
  }

  /** Where a browser-like client goes: the balancer when there is one. */
  get entryUrl(): string {
    if (!this.balancer) throw new Error('this cluster has no balancer');
    return this.balancer.url;
  }

  /**
   * Signals the node's process and waits until it is gone (SIGKILL: no shutdown of any kind). Resolves with
   * how it ended (undefined when it was not running).
   */
  async kill(index: number, signal: NodeJS.Signals = 'SIGKILL'): Promise<{ code: number | null; signal: NodeJS.Signals | null } | undefined> {
    const node = this.node(index);
    const child = node.child;
    if (!child) return undefined;
    await kill(child, signal);
    node.child = undefined;
    return { code: child.exitCode, signal: child.signalCode };
  }

  /** Starts the node again on its port with its settings (after `kill`, or a stop of its own). */
  async restart(index: number): Promise<void> {
    await this.kill(index, 'SIGTERM');
    await this.launch(index);
  }

  /** Whether the node's process is running. */
  alive(index: number): boolean {
    const child = this.node(index).child;
    return child !== undefined && child.exitCode === null && child.signalCode === null;
  }

  /** Waits until the node answers /readyz. */
  async ready(index: number): Promise<void> {
    const node = this.node(index);
    const deadline = Date.now() + READY_MS;
    for (;;) {
      const child = node.child;
      if (!child || child.exitCode !== null || child.signalCode !== null) {
        throw new Error(`node ${index + 1} is not running (exit ${child?.exitCode ?? child?.signalCode}); its log ${node.logFile}:\n${this.logTail(index)}`);
      }
      try {
        if ((await fetch(`${node.baseUrl}/readyz`)).ok) return;
      } catch {
        /* not listening yet */
      }
      if (Date.now() > deadline) throw new Error(`node ${index + 1} did not answer /readyz; its log ${node.logFile}:\n${this.logTail(index)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** Runs the operator CLI (`dist/cli/main.js`) on the cluster's store and Redis; resolves with its stdout. */
  async cli(args: string[]): Promise<string> {
    const { code, stdout, stderr } = await runToEnd(process.execPath, ['dist/cli/main.js', ...args], { PATH: process.env.PATH, ...this.env });
    if (code !== 0) throw new Error(`tabwire ${args.join(' ')} exited with ${code}: ${stderr}`);
    return stdout;
  }

  /** The last lines of a node's log (for failure messages). */
  logTail(index: number, lines = 30): string {
    try {
      return readFileSync(this.node(index).logFile, 'utf8').split('\n').slice(-lines).join('\n');
    } catch {
      return '(no log)';
    }
  }

  /** Stops every node (SIGKILL: nothing a test asserts happens at a clean stop), the balancer and Redis; removes the directory and a database the harness made. */
  async stop(): Promise<void> {
    await Promise.all(this.nodes.map((n) => this.kill(n.index)));
    await this.balancer?.close();
    await this.redis.stop();
    await dropMade(this.store);
    rmSync(this.dir, { recursive: true, force: true });
  }

  private node(index: number): ClusterNode {
    const node = this.nodes[index];
    if (!node) throw new Error(`no node ${index}`);
    return node;
  }

  private async launch(index: number): Promise<void> {
    const node = this.node(index);
    const log = openSync(node.logFile, 'a');
    try {
      node.child = spawn(process.execPath, [...SERVICE_NODE_FLAGS, ...this.nodeArgs(index), 'dist/main.js'], {
        env: { PATH: process.env.PATH, ...this.env, TABWIRE_PORT: String(node.port), ...this.nodeEnv(index) },
        stdio: ['ignore', log, log],
      });
    } finally {
      closeSync(log);
    }
    await this.ready(index);
  }
}
