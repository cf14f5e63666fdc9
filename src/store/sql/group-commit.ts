import { CompiledQuery, type Kysely } from 'kysely';
import type { Database } from '../schema.js';
import type { SqlFlavour, SyncWriter } from './flavour.js';

/**
 * When a batch starts. `turn`: calls of the same event-loop turn are collected first (best when
 * many HTTP requests arrive together, as QR requests do). `immediate`: a lone caller is written at
 * once and only calls arriving while a write is in progress wait for the next batch (best for a
 * caller that awaits each write in turn). `off`: no batches; every write runs at once on its own
 * (used where the flavour does not group-commit).
 */
export type BatchStart = 'turn' | 'immediate' | 'off';

/** One statement of a write, compiled once (hot paths skip Kysely's per-call build and compile), with its parameters. */
export interface Step {
  sql: string | CompiledQuery;
  params: readonly unknown[];
}

/**
 * A write: its steps run in order in one transaction, each only if the one before changed a row (settle a
 * code, then store its callback). Resolves with the rows each step changed; shorter when a step changed none.
 * Steps only touch the database: a write may run twice (in a batch that rolled back, then alone).
 */
export type Write = readonly Step[];

/**
 * Runs a statement compiled once with new parameters; resolves with the rows it changed. Given the
 * CompiledQuery (not only its text), the statement keeps its query node, so the column rules still
 * check the new parameters (column-rules.ts).
 */
export const rowsChanged = async (executor: Pick<Kysely<Database>, 'executeQuery'>, statement: string | CompiledQuery, params: readonly unknown[]): Promise<number> =>
  Number((await executor.executeQuery(withParameters(statement, params))).numAffectedRows ?? 0n);

/** The compiled statement with these parameters (a text becomes a raw query). */
export function withParameters<R>(statement: CompiledQuery<R>, params: readonly unknown[]): CompiledQuery<R>;
export function withParameters(statement: string | CompiledQuery, params: readonly unknown[]): CompiledQuery;
export function withParameters(statement: string | CompiledQuery, params: readonly unknown[]): CompiledQuery {
  return typeof statement === 'string' ? CompiledQuery.raw(statement, [...params]) : { ...statement, parameters: params };
}

async function runWrite(executor: Pick<Kysely<Database>, 'executeQuery'>, write: Write): Promise<number[]> {
  const changed: number[] = [];
  for (const step of write) {
    const n = await rowsChanged(executor, step.sql, step.params);
    changed.push(n);
    if (n === 0) break;
  }
  return changed;
}

function runWriteSync(writer: SyncWriter, write: Write): number[] {
  const changed: number[] = [];
  for (const step of write) {
    const n = writer.run(step.sql, step.params);
    changed.push(n);
    if (n === 0) break;
  }
  return changed;
}

/** A write on its own through a SyncWriter: one statement as it is, several in a transaction. */
const writeAloneSync = (writer: SyncWriter, write: Write): number[] =>
  write.length === 1 ? runWriteSync(writer, write) : writer.transaction(() => runWriteSync(writer, write));

interface Item {
  write: Write;
  resolve: (changed: number[]) => void;
  reject: (err: unknown) => void;
}

/**
 * Group commit: writes of many callers share one transaction, so under load a commit (the dominant
 * cost of a small SQLite write: ~60-120 µs against ~15-30 µs for the statement itself) is paid once per
 * batch. Each caller resolves only once its write is committed; if a batch fails, every write in it is
 * retried alone, so one failing write cannot fail its neighbours.
 *
 * A batch is one Kysely transaction, which holds one connection (of a pool too) from BEGIN to COMMIT; on
 * PostgreSQL any failed statement aborts the whole transaction, and a deadlock between two nodes' batches
 * is such a failure, retried alone. Where the flavour has a SyncWriter (SQLite, whose driver is
 * synchronous anyway), a batch holds Kysely's connection once and runs all its statements synchronously:
 * no promise, no query executor and no connection hand-over per statement (~5 µs less of the event loop per
 * QR code; docs/benchmarks.md#group-commit).
 */
export class CommitQueue {
  private pending: Item[] = [];
  private writing = false;
  private scheduled = false;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly start: BatchStart,
    private readonly sync?: SyncWriter,
  ) {}

  /** Runs one compiled statement; resolves with the number of rows it changed. */
  async run(sql: string | CompiledQuery, params: readonly unknown[]): Promise<number> {
    return (await this.write([{ sql, params }]))[0]!;
  }

  /** Runs a write (see Write) in the next batch's transaction; resolves with the rows each step changed, once committed. */
  write(write: Write): Promise<number[]> {
    if (this.start === 'off') return this.alone(write);
    return new Promise((resolve, reject) => {
      this.pending.push({ write, resolve, reject });
      if (this.writing || this.scheduled) return;
      if (this.start === 'immediate') {
        void this.drain();
      } else {
        this.scheduled = true;
        setImmediate(() => {
          this.scheduled = false;
          void this.drain();
        });
      }
    });
  }

  /** A write on its own: one statement outside a transaction, several in a transaction of their own. */
  private alone(write: Write): Promise<number[]> {
    if (this.sync) {
      const sync = this.sync;
      return this.db.connection().execute(async () => writeAloneSync(sync, write));
    }
    if (write.length === 1) return runWrite(this.db, write);
    return this.db.transaction().execute((trx) => runWrite(trx, write));
  }

  private async drain(): Promise<void> {
    if (this.writing) return;
    this.writing = true;
    try {
      while (this.pending.length > 0) await this.flush();
    } finally {
      this.writing = false;
    }
  }

  private async flush(): Promise<void> {
    const batch = this.pending;
    this.pending = [];
    if (this.sync) return this.flushSync(batch, this.sync);
    if (batch.length > 1) {
      try {
        const results = await this.db.transaction().execute(async (trx) => {
          const out: number[][] = [];
          for (const item of batch) out.push(await runWrite(trx, item.write));
          return out;
        });
        batch.forEach((item, i) => item.resolve(results[i]!));
        return;
      } catch {
        // retried one by one below
      }
    }
    for (const item of batch) await this.alone(item.write).then(item.resolve, item.reject);
  }

  /** The batch with Kysely's one connection held throughout: nothing else can start a statement in between. */
  private async flushSync(batch: Item[], sync: SyncWriter): Promise<void> {
    try {
      await this.db.connection().execute(async () => {
        if (batch.length > 1) {
          try {
            const results = sync.transaction(() => batch.map((item) => runWriteSync(sync, item.write)));
            batch.forEach((item, i) => item.resolve(results[i]!));
            return;
          } catch {
            // retried one by one below
          }
        }
        for (const item of batch) {
          try {
            item.resolve(writeAloneSync(sync, item.write));
          } catch (err) {
            item.reject(err);
          }
        }
      });
    } catch (err) {
      // The connection could not be had (the store is closing): nothing of the batch ran. A settled promise ignores this.
      for (const item of batch) item.reject(err);
    }
  }
}

/**
 * A commit queue for a flavour: batches where it group-commits, its synchronous writer where it has one
 * (unless `viaKysely`, see outboxCommitQueue).
 */
export const commitQueue = (db: Kysely<Database>, flavour: SqlFlavour, start: Exclude<BatchStart, 'off'>, o: { viaKysely?: boolean } = {}): CommitQueue =>
  new CommitQueue(db, flavour.groupCommit ? start : 'off', o.viaKysely === true ? undefined : flavour.syncWriter);

/** One compiled statement for many callers, group-committed (see CommitQueue). Used on hot paths only (QR codes, callbacks). */
export class GroupCommit {
  constructor(
    private readonly sql: string | CompiledQuery,
    private readonly queue: CommitQueue,
  ) {}

  /** Resolves with the number of rows the statement changed for these parameters. */
  run(params: readonly unknown[]): Promise<number> {
    return this.queue.run(this.sql, params);
  }
}

const outboxQueues = new WeakMap<Kysely<Database>, CommitQueue>();

/**
 * The queue the callback outbox's writes share on a database: settling a code together with its callback
 * (code store) and marking callbacks delivered (callback store). Both come from I/O (a signature request,
 * a backend's answer), so a batch collects one loop turn: one commit per turn for all of them.
 *
 * It runs its batches through Kysely even where the flavour has a SyncWriter. Measured with the callbacks
 * benchmark (docs/benchmarks.md#group-commit): synchronous batches took ~5 µs less of the event loop per
 * callback, but a burst's settlements then all committed before its deliveries, and the deliveries alone
 * went at the pace of the round trip to the backend: 10,600-13,000 callbacks/s against 13,100-15,700.
 */
export function outboxCommitQueue(db: Kysely<Database>, flavour: SqlFlavour): CommitQueue {
  let queue = outboxQueues.get(db);
  if (!queue) {
    queue = commitQueue(db, flavour, 'turn', { viaKysely: true });
    outboxQueues.set(db, queue);
  }
  return queue;
}
