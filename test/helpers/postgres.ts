import { execFile, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chownSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { freePort } from './service.js';
import { acceptsConnections } from './ports.js';
import { spawnWatched } from './child.js';

/**
 * A private PostgreSQL 15 (Debian's packages) on loopback for tests: a temporary data directory owned by
 * the `postgres` user (PostgreSQL refuses to run as root), trust authentication for the superuser
 * `tabwire`, run in the foreground as a child of the test process. docs/store.md "Testing".
 */
export interface PostgresServer {
  port: number;
  /** The maintenance database's URL (`postgres://tabwire@127.0.0.1:<port>/postgres`). */
  adminUrl: string;
  /** A new empty database with a unique name; returns its URL. */
  createDatabase(): Promise<string>;
  /** Fast shutdown (clients are disconnected), waits for the exit; the data directory stays. */
  down(): Promise<void>;
  /** Starts again on the same port and data directory; resolves when it accepts connections. */
  up(): Promise<void>;
  /** down() then up(). */
  restart(): Promise<void>;
  /** Shuts down, waits for the exit and removes the data directory. */
  stop(): Promise<void>;
}

const BIN = '/usr/lib/postgresql/15/bin';
const USER = 'tabwire';
const exec = promisify(execFile);

export interface PostgresOptions {
  /**
   * Whether commits wait for the disk (PostgreSQL's default). Tests turn it off (a crash of the test
   * machine loses nothing they need, and databases are created faster); benchmarks keep it on.
   */
  fsync?: boolean;
  /** `max_connections`; 200 unless given. */
  maxConnections?: number;
  /** More server settings, `name=value` each (passed as `-c`), such as the benchmarks' pg_stat_statements. */
  settings?: readonly string[];
}

/** Initialises a data directory and starts PostgreSQL on a free loopback port. */
export async function startPostgres(options: PostgresOptions = {}): Promise<PostgresServer> {
  const settings = ['-c', `max_connections=${options.maxConnections ?? 200}`, '-c', `fsync=${options.fsync === true ? 'on' : 'off'}`];
  for (const setting of options.settings ?? []) settings.push('-c', setting);
  const dir = mkdtempSync(join(tmpdir(), 'tabwire-pg-'));
  const data = join(dir, 'data');
  const owner = await postgresIds();
  chownSync(dir, owner.uid, owner.gid);
  await exec('runuser', ['-u', 'postgres', '--', join(BIN, 'initdb'), '-D', data, '-A', 'trust', '-U', USER, '--no-sync', '-E', 'UTF8', '--locale', 'C.UTF-8'], {
    cwd: dir,
  });
  const port = await freePort();
  let child: ChildProcess | undefined = await launch(dir, data, port, settings);
  const adminUrl = urlFor(port, 'postgres');
  const server: PostgresServer = {
    port,
    adminUrl,
    createDatabase: () => createDatabase(adminUrl),
    async down() {
      if (child) await shutdown(child, data);
      child = undefined;
    },
    async up() {
      if (!child) child = await launch(dir, data, port, settings);
    },
    async restart() {
      await server.down();
      await server.up();
    },
    async stop() {
      await server.down();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return server;
}

const urlFor = (port: number, database: string): string => `postgres://${USER}@127.0.0.1:${port}/${database}`;

/** A fresh database on the server `adminUrl` names (each test file or suite takes its own); returns its URL. */
export async function createDatabase(adminUrl: string): Promise<string> {
  const name = `t_${randomBytes(6).toString('hex')}`;
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(`create database ${name}`);
  } finally {
    await client.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

async function postgresIds(): Promise<{ uid: number; gid: number }> {
  const [uid, gid] = await Promise.all([exec('id', ['-u', 'postgres']), exec('id', ['-g', 'postgres'])]);
  return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
}

/** `postgres -D … -p … -k …` in the foreground under runuser; resolves when the port accepts connections. */
async function launch(dir: string, data: string, port: number, settings: string[]): Promise<ChildProcess> {
  const args = ['-u', 'postgres', '--', join(BIN, 'postgres'), '-D', data, '-p', String(port), '-k', dir, '-c', 'listen_addresses=127.0.0.1'];
  args.push(...settings);
  // If the test process exits without stop(), take the server with it (best effort): the postmaster runs as postgres.
  const { child, output } = spawnWatched('runuser', args, () => {
    postmasterPid(data).then((pid) => pid && process.kill(pid, 'SIGQUIT'), () => undefined);
  });

  const deadline = Date.now() + 20_000;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`postgres exited (${child.exitCode ?? child.signalCode}): ${output()}`);
    if ((await acceptsConnections(port)) && (await answersQueries(urlFor(port, 'postgres')))) return child;
    if (Date.now() > deadline) {
      await shutdown(child, data);
      throw new Error(`postgres did not accept connections on ${port}: ${output()}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Whether a client can connect to `url` and run a query yet. Accepting TCP is not enough: during start-up the
 * server answers 57P03 "the database system is starting up". The cluster benchmark waits for its server with it too.
 */
export async function answersQueries(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('select 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function postmasterPid(data: string): Promise<number | undefined> {
  try {
    const pid = Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/**
 * SIGTERM is PostgreSQL's *smart* shutdown, which waits for every client to disconnect, and runuser sends
 * SIGKILL two seconds after forwarding a SIGTERM. So the postmaster (its pid is in postmaster.pid) gets
 * SIGINT, a fast shutdown: clients are disconnected (57P01) and the server stops cleanly; runuser exits
 * with it. SIGTERM to runuser remains the fallback, and SIGKILL after 10 s.
 */
async function shutdown(child: ChildProcess, data: string): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const pid = await postmasterPid(data);
  if (pid === undefined) child.kill('SIGTERM');
  else {
    try {
      process.kill(pid, 'SIGINT');
    } catch {
      child.kill('SIGTERM');
    }
  }
  const force = setTimeout(() => {
    if (pid !== undefined) process.kill(pid, 'SIGQUIT'); // immediate shutdown: no orphaned server
    child.kill('SIGKILL');
  }, 10_000);
  await exited;
  clearTimeout(force);
}

