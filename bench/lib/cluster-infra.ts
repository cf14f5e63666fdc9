/**
 * The shared parts of a cluster for bench/cluster.ts: a private PostgreSQL 15 and a private Redis on
 * loopback, each a foreground child of the benchmark (Debian's packages, as test/helpers/postgres.ts and
 * test/helpers/redis.ts start them), stopped by pid. Plus what the benchmark reads from them: the
 * statements PostgreSQL ran (pg_stat_statements), the commands Redis ran (INFO commandstats) and the CPU
 * both used (/proc). Loopback only; the data directories are temporary and removed afterwards.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { chownSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import pg from 'pg';
import { freePort } from './child.js';
import { percentile } from './stats.js';

const exec = promisify(execFile);
const PG_BIN = '/usr/lib/postgresql/15/bin';
const PG_USER = 'tabwire';
/** Linux's USER_HZ: /proc/<pid>/stat counts CPU in 1/100 s. */
const TICK_MICROS = 10_000;

/** user + system CPU (µs) of one process, all its threads, from /proc/<pid>/stat; 0 once it is gone. */
export function procCpuMicros(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * TICK_MICROS;
  } catch {
    return 0;
  }
}

/**
 * CPU (µs) of a process and its direct children (PostgreSQL's postmaster and its backends), counting
 * children that have exited since with what they had used when last seen (a pool closes idle
 * connections, and their backends exit: without this the total would drop).
 */
export class TreeCpu {
  private readonly seen = new Map<number, number>();

  constructor(private readonly root: number) {}

  read(): number {
    this.seen.set(this.root, procCpuMicros(this.root) || (this.seen.get(this.root) ?? 0));
    for (const name of readdirSync('/proc')) {
      if (!/^\d+$/.test(name)) continue;
      try {
        const stat = readFileSync(`/proc/${name}/stat`, 'latin1');
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        if (Number(fields[1]) === this.root) this.seen.set(Number(name), (Number(fields[11]) + Number(fields[12])) * TICK_MICROS);
      } catch {
        // exited meanwhile: its last reading stays
      }
    }
    let total = 0;
    for (const v of this.seen.values()) total += v;
    return total;
  }
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

function waitExit(child: ChildProcess, ms: number): Promise<boolean> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

/** Statement counts of one database since PostgreSQL started (pg_stat_statements; the benchmark's own reads left out). */
export interface PgReading {
  /** Normalised statement text -> calls. */
  calls: Map<string, number>;
  /**
   * Transaction ids assigned so far (pg_current_snapshot's xmax): one per transaction that wrote, each a
   * WAL flush with synchronous_commit on. Read-only transactions take none. (pg_stat_database's commit
   * counts are not used: backends report them up to seconds late.)
   */
  writeXacts: number;
  /** pg_stat_wal: WAL syncs and the time they took (track_wal_io_timing), reported as lazily as commits. */
  walSyncs: number;
  walSyncMs: number;
  /** CPU (µs) of the postmaster and all its processes. */
  cpuMicros: number;
  /** WAL bytes written so far (pg_current_wal_lsn). */
  walBytes: number;
}

export interface BenchPostgres {
  port: number;
  /** URL of the benchmark's database (`tabwire_bench`), pg_stat_statements installed in it. */
  url: string;
  /** pid of the postmaster. */
  postmasterPid: number;
  /** CPU (µs) of the postmaster and its processes so far, exited backends included. */
  cpuMicros(): number;
  read(): Promise<PgReading>;
  stop(): Promise<void>;
}

/**
 * PostgreSQL 15 in the foreground under runuser (it refuses to run as root), trust authentication for
 * `tabwire`, loopback only, PostgreSQL's defaults otherwise (fsync and synchronous_commit on, as a
 * deployment runs), with pg_stat_statements loaded so every statement the nodes run is counted.
 */
export async function startBenchPostgres(): Promise<BenchPostgres> {
  const dir = mkdtempSync(join(tmpdir(), 'tabwire-bench-pg-'));
  const data = join(dir, 'data');
  const [uid, gid] = await Promise.all([exec('id', ['-u', 'postgres']), exec('id', ['-g', 'postgres'])]);
  chownSync(dir, Number(uid.stdout.trim()), Number(gid.stdout.trim()));
  await exec('runuser', ['-u', 'postgres', '--', join(PG_BIN, 'initdb'), '-D', data, '-A', 'trust', '-U', PG_USER, '--no-sync', '-E', 'UTF8', '--locale', 'C.UTF-8'], { cwd: dir });
  const port = await freePort();
  const args = ['-u', 'postgres', '--', join(PG_BIN, 'postgres'), '-D', data, '-p', String(port), '-k', dir, '-c', 'listen_addresses=127.0.0.1'];
  args.push('-c', 'max_connections=100', '-c', 'shared_preload_libraries=pg_stat_statements', '-c', 'pg_stat_statements.track=top', '-c', 'track_wal_io_timing=on');
  // BENCH_PG_SYNCHRONOUS_COMMIT=off: commits no longer wait for their WAL flush, the durability of the embedded
  // node's SQLite (WAL, synchronous NORMAL): a crash may lose the last commits, never corrupts (docs/store.md).
  const synchronousCommit = process.env.BENCH_PG_SYNCHRONOUS_COMMIT;
  if (synchronousCommit !== undefined) args.push('-c', `synchronous_commit=${synchronousCommit}`);
  const child = spawn('runuser', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const collect = (chunk: Buffer): void => {
    output = (output + chunk.toString()).slice(-4000);
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  child.on('error', (err) => collect(Buffer.from(`spawn failed: ${err.message}\n`)));
  const postmaster = (): number | undefined => {
    try {
      const pid = Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
      return Number.isInteger(pid) && pid > 0 ? pid : undefined;
    } catch {
      return undefined;
    }
  };
  // Never outlive the benchmark (an interrupt ends it without `finally`).
  const orphanGuard = (): void => {
    const pid = postmaster();
    if (pid) process.kill(pid, 'SIGQUIT');
    child.kill('SIGKILL');
  };
  process.once('exit', orphanGuard);

  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) {
      // SIGINT to the postmaster: fast shutdown (runuser would SIGKILL 2 s after forwarding a SIGTERM).
      const pid = postmaster();
      try {
        if (pid) process.kill(pid, 'SIGINT');
        else child.kill('SIGTERM');
      } catch {
        child.kill('SIGTERM');
      }
      if (!(await waitExit(child, 10_000))) {
        if (pid) process.kill(pid, 'SIGQUIT');
        child.kill('SIGKILL');
        await waitExit(child, 5_000);
      }
    }
    process.off('exit', orphanGuard);
    rmSync(dir, { recursive: true, force: true });
  };

  try {
    const admin = `postgres://${PG_USER}@127.0.0.1:${port}/postgres`;
    const deadline = Date.now() + 30_000;
    for (;;) {
      if (child.exitCode !== null || child.signalCode !== null) throw new Error(`postgres exited: ${output}`);
      if ((await accepts(port)) && (await queryOk(admin))) break;
      if (Date.now() > deadline) throw new Error(`postgres did not start: ${output}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const setup = new pg.Client({ connectionString: admin });
    await setup.connect();
    await setup.query('create database tabwire_bench');
    await setup.end();
    const url = `postgres://${PG_USER}@127.0.0.1:${port}/tabwire_bench`;
    const reader = new pg.Client({ connectionString: url });
    reader.on('error', () => undefined);
    await reader.connect();
    await reader.query('create extension pg_stat_statements');
    const pid = postmaster();
    if (pid === undefined) throw new Error('no postmaster.pid');
    const tree = new TreeCpu(pid);
    return {
      port,
      url,
      postmasterPid: pid,
      cpuMicros: () => tree.read(),
      async read() {
        // One statement, so the reading itself is one transaction and one pg_stat_statements entry (filtered out).
        const r = await reader.query<{ query: string | null; calls: string | null; xid: string; wal: string; syncs: string; sync_ms: string }>(
          `select s.query, s.calls::text, pg_snapshot_xmax(pg_current_snapshot())::text as xid,
                  pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::text as wal, w.wal_sync::text as syncs, w.wal_sync_time::text as sync_ms
             from pg_stat_wal w left join pg_stat_statements s on s.dbid = (select oid from pg_database where datname = current_database())`,
        );
        const calls = new Map<string, number>();
        for (const row of r.rows) {
          if (row.query === null || /pg_stat_|pg_current_/i.test(row.query)) continue;
          calls.set(row.query, (calls.get(row.query) ?? 0) + Number(row.calls));
        }
        const first = r.rows[0];
        return {
          calls,
          writeXacts: Number(first?.xid ?? 0),
          cpuMicros: tree.read(),
          walBytes: Number(first?.wal ?? 0),
          walSyncs: Number(first?.syncs ?? 0),
          walSyncMs: Number(first?.sync_ms ?? 0),
        };
      },
      async stop() {
        await reader.end().catch(() => undefined);
        await stop();
      },
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

async function queryOk(url: string): Promise<boolean> {
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

/** What Redis ran since it started: calls per command (commands inside Lua scripts counted too), and its CPU. */
export interface RedisReading {
  calls: Map<string, number>;
  /** Server-side time per command, µs (a script's includes its inner commands). */
  usec: Map<string, number>;
  cpuMicros: number;
  usedMemory: number;
  keys: number;
}

export interface BenchRedis {
  port: number;
  url: string;
  pid: number;
  read(): Promise<RedisReading>;
  stop(): Promise<void>;
}

/** `redis-server --port P --save '' --appendonly no` in the foreground on loopback, in a temporary directory. */
export async function startBenchRedis(): Promise<BenchRedis> {
  const dir = mkdtempSync(join(tmpdir(), 'tabwire-bench-redis-'));
  const port = await freePort();
  const child = spawn('redis-server', ['--port', String(port), '--save', '', '--appendonly', 'no', '--bind', '127.0.0.1', '--dir', dir, '--daemonize', 'no'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const collect = (chunk: Buffer): void => {
    output = (output + chunk.toString()).slice(-4000);
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  child.on('error', (err) => collect(Buffer.from(`spawn failed: ${err.message}\n`)));
  const orphanGuard = (): void => {
    child.kill('SIGKILL');
  };
  process.once('exit', orphanGuard);
  let reader: Redis | undefined;
  const stop = async (): Promise<void> => {
    reader?.disconnect();
    if (!(await waitExit(child, 0))) {
      child.kill('SIGTERM');
      if (!(await waitExit(child, 5_000))) {
        child.kill('SIGKILL');
        await waitExit(child, 5_000);
      }
    }
    process.off('exit', orphanGuard);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const deadline = Date.now() + 15_000;
    while (!(await accepts(port))) {
      if (child.exitCode !== null || child.signalCode !== null) throw new Error(`redis-server exited: ${output}`);
      if (Date.now() > deadline) throw new Error(`redis-server did not open port ${port}: ${output}`);
      await new Promise((r) => setTimeout(r, 25));
    }
    const url = `redis://127.0.0.1:${port}`;
    const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
    client.on('error', () => undefined);
    await client.connect();
    reader = client;
    if (child.pid === undefined) throw new Error('redis-server has no pid');
    const pid = child.pid;
    return {
      port,
      url,
      pid,
      async read() {
        const [stats, memory, keyspace] = await Promise.all([client.info('commandstats'), client.info('memory'), client.dbsize()]);
        const calls = new Map<string, number>();
        const usec = new Map<string, number>();
        for (const m of stats.matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)) {
          // The benchmark's own readings are not the nodes' load.
          if (m[1] === 'info' || m[1] === 'dbsize') continue;
          calls.set(m[1]!, Number(m[2]));
          usec.set(m[1]!, Number(m[3]));
        }
        const used = Number(/^used_memory:(\d+)/m.exec(memory)?.[1] ?? 0);
        return { calls, usec, cpuMicros: procCpuMicros(pid), usedMemory: used, keys: keyspace };
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/**
 * Redis PING round trips from this process, one every `everyMs`, for `ms`, on a connection of its own: a
 * long one means Redis (single-threaded) was busy with something else, such as a pipeline of scripts.
 */
export async function pingRedis(url: string, ms: number, everyMs = 5): Promise<{ count: number; p50: number; p99: number; max: number }> {
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  client.on('error', () => undefined);
  await client.connect();
  const rtts: number[] = [];
  try {
    const end = performance.now() + ms;
    while (performance.now() < end) {
      const t = performance.now();
      await client.ping();
      rtts.push(performance.now() - t);
      await new Promise((r) => setTimeout(r, everyMs));
    }
  } finally {
    client.disconnect();
  }
  return { count: rtts.length, p50: percentile(rtts, 50), p99: percentile(rtts, 99), max: percentile(rtts, 100) };
}

/** b - a per key, keys with no change left out. */
export function deltaOf(a: Map<string, number>, b: Map<string, number>): Map<string, number> {
  const out = new Map<string, number>();
  for (const [k, v] of b) {
    const d = v - (a.get(k) ?? 0);
    if (d !== 0) out.set(k, d);
  }
  return out;
}

export const sumOf = (m: Map<string, number> | Record<string, number>): number =>
  [...(m instanceof Map ? m.values() : Object.values(m))].reduce((s, v) => s + v, 0);
