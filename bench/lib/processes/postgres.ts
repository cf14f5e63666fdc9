/**
 * A private PostgreSQL 15 for the cluster benchmark (bench/cluster.ts), started by test/helpers/postgres.ts
 * (a foreground child on loopback in a temporary data directory, stopped by pid and removed afterwards).
 * Plus what the benchmark reads from it: the statements it ran (pg_stat_statements),
 * its write transactions and WAL, and the CPU of all its processes (/proc).
 */
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { startPostgres } from '../../../test/helpers/postgres.js';
import { sumOf } from '../measure/counter-maps.js';
import { TreeCpu } from '../measure/proc-cpu.js';

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
  /** The same by kind of process (`postgresProcessKind`), the postmaster with its exited children apart. */
  cpuByKind: Map<string, number>;
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
 * PostgreSQL 15 with PostgreSQL's defaults (fsync and synchronous_commit on, as a deployment runs), 100
 * connections, and pg_stat_statements loaded so every statement the nodes run is counted.
 */
export async function startBenchPostgres(): Promise<BenchPostgres> {
  const settings = ['shared_preload_libraries=pg_stat_statements', 'pg_stat_statements.track=top', 'track_wal_io_timing=on'];
  // BENCH_PG_SYNCHRONOUS_COMMIT=off: commits no longer wait for their WAL flush, the durability of the embedded
  // node's SQLite (WAL, synchronous NORMAL): a crash may lose the last commits, never corrupts (docs/store.md).
  const synchronousCommit = process.env.BENCH_PG_SYNCHRONOUS_COMMIT;
  if (synchronousCommit !== undefined) settings.push(`synchronous_commit=${synchronousCommit}`);
  const server = await startPostgres({ fsync: true, maxConnections: 100, settings });
  const port = server.port;
  const admin = server.adminUrl;
  const stop = (): Promise<void> => server.stop();

  try {
    const setup = new pg.Client({ connectionString: admin });
    await setup.connect();
    await setup.query('create database tabwire_bench');
    await setup.end();
    const url = new URL('/tabwire_bench', admin).toString();
    const reader = new pg.Client({ connectionString: url });
    reader.on('error', () => undefined);
    await reader.connect();
    await reader.query('create extension pg_stat_statements');
    const pid = await postmasterPid(url);
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
        const cpuByKind = tree.readParts(postgresProcessKind);
        return {
          calls,
          writeXacts: Number(first?.xid ?? 0),
          cpuMicros: sumOf(cpuByKind),
          cpuByKind,
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

/**
 * What a PostgreSQL process does, from the title PostgreSQL gives it (`postgres: checkpointer`, `postgres:
 * autovacuum worker db`, `postgres: user db host(port) idle` for a backend).
 */
export function postgresProcessKind(title: string): string {
  const what = title.replace(/^postgres:\s*/, '');
  if (what.startsWith('autovacuum worker')) return 'autovacuum workers';
  for (const kind of ['checkpointer', 'background writer', 'walwriter', 'autovacuum launcher', 'logical replication launcher']) {
    if (what.startsWith(kind)) return kind;
  }
  return 'backends';
}

/** The postmaster's pid: the parent of a backend (whose pid a query tells), read from /proc. */
export async function postmasterPid(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const backend = (await client.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid;
    const stat = readFileSync(`/proc/${backend}/stat`, 'latin1');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } finally {
    await client.end();
  }
}
