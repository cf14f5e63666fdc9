import { CompiledQuery, type Kysely } from 'kysely';
import type { Database } from '../schema.js';

/**
 * When a batch starts. `turn`: calls of the same event-loop turn are collected first (best when
 * many HTTP requests arrive together, as QR requests do). `immediate`: a lone caller is written at
 * once and only calls arriving while a write is in progress wait for the next batch (best for a
 * caller that awaits each write in turn, as the callback outbox's enqueue does).
 */
export type BatchStart = 'turn' | 'immediate';

/**
 * Runs one compiled statement for many callers with group commit: calls batched per `start` share
 * one transaction, so under load a commit (the dominant cost of a small SQLite write) is paid once
 * per batch. Each caller resolves only once its row is committed; a failing row is retried alone,
 * so it cannot fail its neighbours. Used on hot paths only (QR codes, callbacks).
 */
export class GroupCommit {
  private pending: { params: unknown[]; resolve: (rows: number) => void; reject: (err: unknown) => void }[] = [];
  private writing = false;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly sql: string,
    private readonly start: BatchStart,
  ) {}

  /** Resolves with the number of rows the statement changed for these parameters. */
  run(params: unknown[]): Promise<number> {
    return new Promise((resolve, reject) => {
      this.pending.push({ params, resolve, reject });
      if (this.writing || this.pending.length > 1) return;
      if (this.start === 'immediate') void this.drain();
      else setImmediate(() => void this.drain());
    });
  }

  private async drain(): Promise<void> {
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
    const run = async (executor: Pick<Kysely<Database>, 'executeQuery'>, params: unknown[]) =>
      Number((await executor.executeQuery(CompiledQuery.raw(this.sql, params))).numAffectedRows ?? 0n);
    if (batch.length > 1) {
      try {
        const counts = await this.db.transaction().execute(async (trx) => {
          const out: number[] = [];
          for (const item of batch) out.push(await run(trx, item.params));
          return out;
        });
        batch.forEach((item, i) => item.resolve(counts[i]!));
        return;
      } catch {
        // retried one by one below
      }
    }
    for (const item of batch) await run(this.db, item.params).then(item.resolve, item.reject);
  }
}
