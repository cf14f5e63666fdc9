import { CompiledQuery, type Kysely } from 'kysely';
import type { Database } from '../schema.js';
import type { SqlFlavour } from './flavour.js';

/**
 * When a batch starts. `turn`: calls of the same event-loop turn are collected first (best when
 * many HTTP requests arrive together, as QR requests do). `immediate`: a lone caller is written at
 * once and only calls arriving while a write is in progress wait for the next batch (best for a
 * caller that awaits each write in turn). `off`: no batches; every write runs at once on its own
 * (PostgreSQL: the pool's connections write side by side, and the server groups their commits itself).
 */
export type BatchStart = 'turn' | 'immediate' | 'off';

/** A batch mode, or `off` where the flavour does not group-commit (docs/store.md "Group commit"). */
export const batchStart = (flavour: SqlFlavour, start: Exclude<BatchStart, 'off'>): BatchStart => (flavour.groupCommit ? start : 'off');

/**
 * What a unit of work may use: the batch's transaction, or (a unit retried alone) a transaction of its own.
 * Units only ever touch the database: a unit may run twice (in a batch that rolled back, then alone).
 */
export type UnitExecutor = Kysely<Database>;

interface Item {
  /** A single statement may run outside a transaction when it is alone; a unit never does. */
  alone: (db: Kysely<Database>) => Promise<unknown>;
  work: (executor: UnitExecutor) => Promise<unknown>;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

/**
 * Runs a statement compiled once (hot paths skip Kysely's per-call build and compile) with new parameters;
 * resolves with the rows it changed. Given the CompiledQuery (not only its text), the statement keeps its
 * query node, so the column rules still check the new parameters (column-rules.ts).
 */
export const rowsChanged = async (executor: Pick<Kysely<Database>, 'executeQuery'>, statement: string | CompiledQuery, params: readonly unknown[]): Promise<number> => {
  const query = typeof statement === 'string' ? CompiledQuery.raw(statement, [...params]) : { ...statement, parameters: [...params] };
  return Number((await executor.executeQuery(query)).numAffectedRows ?? 0n);
};

/**
 * Group commit: writes of many callers share one transaction, so under load a commit (the dominant
 * cost of a small SQLite write: ~60-120 µs against ~15-30 µs for the statement itself) is paid once per
 * batch. A write is one compiled statement (`run`) or a unit of several dependent statements (`unit`,
 * e.g. settle a code and store its callback). Each caller resolves only once its write is committed; if
 * a batch fails, every write in it is retried alone, so one failing write cannot fail its neighbours.
 * Nothing here depends on SQLite's single connection: a batch is one Kysely transaction, which holds
 * one connection (of a pool too) from BEGIN to COMMIT; on PostgreSQL any failed statement aborts the
 * whole transaction, and a deadlock between two nodes' batches is such a failure, retried alone.
 */
export class CommitQueue {
  private pending: Item[] = [];
  private writing = false;
  private scheduled = false;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly start: BatchStart,
  ) {}

  /** Runs one compiled statement; resolves with the number of rows it changed. */
  run(sql: string | CompiledQuery, params: readonly unknown[]): Promise<number> {
    const once = (executor: Pick<Kysely<Database>, 'executeQuery'>) => rowsChanged(executor, sql, params);
    return this.add(once, once) as Promise<number>;
  }

  /** Runs `work` atomically in the next batch's transaction; resolves with its result once committed. */
  unit<T>(work: (executor: UnitExecutor) => Promise<T>): Promise<T> {
    return this.add(work, (db) => db.transaction().execute((trx) => work(trx))) as Promise<T>;
  }

  private add(work: Item['work'], alone: Item['alone']): Promise<unknown> {
    if (this.start === 'off') return alone(this.db);
    return new Promise((resolve, reject) => {
      this.pending.push({ work, alone, resolve, reject });
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
    if (batch.length > 1) {
      try {
        const results = await this.db.transaction().execute(async (trx) => {
          const out: unknown[] = [];
          for (const item of batch) out.push(await item.work(trx));
          return out;
        });
        batch.forEach((item, i) => item.resolve(results[i]));
        return;
      } catch {
        // retried one by one below
      }
    }
    for (const item of batch) await item.alone(this.db).then(item.resolve, item.reject);
  }
}

/** One compiled statement for many callers, group-committed (see CommitQueue). Used on hot paths only (QR codes, callbacks). */
export class GroupCommit {
  private readonly queue: CommitQueue;

  /** With a BatchStart, the statement has a queue of its own; with a CommitQueue, it shares that queue's transactions. */
  constructor(
    db: Kysely<Database>,
    private readonly sql: string | CompiledQuery,
    start: BatchStart | CommitQueue,
  ) {
    this.queue = start instanceof CommitQueue ? start : new CommitQueue(db, start);
  }

  /** Resolves with the number of rows the statement changed for these parameters. */
  run(params: unknown[]): Promise<number> {
    return this.queue.run(this.sql, params);
  }
}

const outboxQueues = new WeakMap<Kysely<Database>, CommitQueue>();

/**
 * The queue the callback outbox's writes share on a database: settling a code together with its callback
 * (code store) and marking callbacks delivered (callback store). Both come from I/O (a signature request,
 * a backend's answer), so a batch collects one loop turn: one commit per turn for all of them.
 */
export function outboxCommitQueue(db: Kysely<Database>, flavour: SqlFlavour): CommitQueue {
  let queue = outboxQueues.get(db);
  if (!queue) {
    queue = new CommitQueue(db, batchStart(flavour, 'turn'));
    outboxQueues.set(db, queue);
  }
  return queue;
}
