import type { CompiledQuery, Kysely } from 'kysely';
import type { Database } from '../schema.js';
import type { CommitQueue, UnitExecutor } from './group-commit.js';

interface Mark {
  id: string;
  now: number;
  resolve: (moved: boolean) => void;
  reject: (err: unknown) => void;
}

/** Ids per statement: the IN list is padded to the next of these sizes, so only a few statements are ever prepared. */
const LIST_SIZES = [1, 4, 16, 64] as const;
const LARGEST = LIST_SIZES[LIST_SIZES.length - 1]!;

/**
 * Marks callbacks delivered in batches: the marks asked for before the outbox queue's next commit are
 * written by one `UPDATE … WHERE id IN (…) RETURNING id` in that commit's transaction, instead of one
 * statement each (the statement, the store's checks and a promise per callback: ~5 µs of the event loop
 * under load, docs/benchmarks.md "callbacks"). Each mark still learns whether its row moved (it was
 * pending), so a delivery is counted and announced once, also when one batch marks an id twice. `delivered_at` is the latest time among the
 * batch's marks (they are at most one loop turn apart).
 */
export class DeliveryMarks {
  private waiting: Mark[] = [];
  private readonly statements = new Map<number, CompiledQuery>();

  constructor(
    private readonly db: Kysely<Database>,
    private readonly queue: CommitQueue,
  ) {}

  mark(id: string, now: number): Promise<boolean> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ id, now, resolve, reject });
      if (this.waiting.length === 1) this.writeWithNextCommit();
    });
  }

  /** One unit in the queue for every mark asked for until it runs; marks asked for later go in the next one. */
  private writeWithNextCommit(): void {
    let taken: Mark[] | undefined;
    const take = (): Mark[] => {
      if (taken === undefined) {
        taken = this.waiting;
        this.waiting = [];
      }
      return taken;
    };
    // A unit may run twice (its batch rolled back, then alone): the second run writes the same marks.
    this.queue.unit((executor) => this.write(executor, take())).then(
      (moved) => {
        // The same id twice in one batch (two attempts that both got a 2xx) is delivered once: the first mark.
        for (const m of take()) m.resolve(moved.delete(m.id));
      },
      (err: unknown) => {
        for (const m of take()) m.reject(err);
      },
    );
  }

  private async write(executor: UnitExecutor, marks: readonly Mark[]): Promise<Set<string>> {
    const ids = [...new Set(marks.map((m) => m.id))];
    const deliveredAt = Math.max(...marks.map((m) => m.now));
    const moved = new Set<string>();
    for (let start = 0; start < ids.length; start += LARGEST) {
      const chunk = ids.slice(start, start + LARGEST);
      const size = LIST_SIZES.find((n) => n >= chunk.length)!;
      // Padded with the chunk's first id: IN ignores the repeats.
      const padded = [...chunk, ...Array<string>(size - chunk.length).fill(chunk[0]!)];
      const statement = this.statement(size);
      const result = await executor.executeQuery<{ id: string }>({ ...statement, parameters: ['delivered', deliveredAt, null, 'pending', ...padded] });
      for (const row of result.rows) moved.add(row.id);
    }
    return moved;
  }

  /** The statement for `size` ids, compiled once; parameters: state, delivered_at, lease_until; state; the ids. */
  private statement(size: number): CompiledQuery {
    let compiled = this.statements.get(size);
    if (compiled === undefined) {
      compiled = this.db
        .updateTable('callbacks')
        .set({ state: 'delivered', delivered_at: 0, lease_until: null })
        .where('state', '=', 'pending')
        .where('id', 'in', Array<string>(size).fill(''))
        .returning('id')
        .compile();
      this.statements.set(size, compiled);
    }
    return compiled;
  }
}
