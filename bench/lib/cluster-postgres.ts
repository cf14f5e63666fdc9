/**
 * A private PostgreSQL 15 for the cluster benchmark (bench/cluster.ts): a foreground child on loopback
 * (Debian's package, as test/helpers/postgres.ts starts it) in a temporary data directory, stopped by pid and
 * removed afterwards. Plus what the benchmark reads from it: the statements it ran (pg_stat_statements),
 * its write transactions and WAL, and the CPU of all its processes (/proc).
 */
import { execFile, spawn } from 'node:child_process';
import { chownSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { freePort } from './child.js';
import { acceptsConnections } from '../../test/helpers/ports.js';
import { answersQueries } from '../../test/helpers/postgres.js';
import { outputTail, waitExit } from './foreground-server.js';
import { TreeCpu } from './proc-cpu.js';

const exec = promisify(execFile);
const PG_BIN = '/usr/lib/postgresql/15/bin';
const PG_USER = 'tabwire';

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

/** The running PostgreSQL: where to reach it, its readings, and how to stop it. */
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
  const output = outputTail(child);
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
      if (child.exitCode !== null || child.signalCode !== null) throw new Error(`postgres exited: ${output()}`);
      if ((await acceptsConnections(port)) && (await answersQueries(admin))) break;
      if (Date.now() > deadline) throw new Error(`postgres did not start: ${output()}`);
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
