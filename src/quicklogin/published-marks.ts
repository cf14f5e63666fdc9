import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import { MARKS_PER_CALL, type CodeStore } from '../store/stores.js';
/** Marks waiting at most; beyond, a mark is dropped (its result is published once more, under its key, and marked then). */
const PENDING_LIMIT = 4_096;
/** Statements in flight at most; the rest of the marks wait for one to end. */
export const FLIGHTS_LIMIT = 4;

export interface PublishedMarksDeps {
  codes: Pick<CodeStore, 'markPublished'>;
  clock: Clock;
  log: Pick<Logger, 'warn'>;
}

/**
 * The marks that settled results are in their tabs' streams (docs/events.md "Results reach the page once"),
 * written together: one statement and one commit for every mark of a window (or of MARKS_PER_CALL codes), instead of
 * one each. The mark only keeps the result outbox from publishing a result again, and a result published
 * again under its key appends nothing, so a mark may come late or be lost (the node dies, the database
 * refuses it) at the price of that one publish. The window must stay well inside the outbox's grace, so
 * that a live node's marks land before the outbox looks at its results.
 */
export class PublishedMarks {
  private pending: string[] = [];
  private timer: NodeJS.Timeout | undefined;
  private readonly flights = new Set<Promise<void>>();
  private dropped = 0;

  constructor(
    private readonly deps: PublishedMarksDeps,
    private readonly windowMs: number,
  ) {}

  /** Marks `code` published within the window. */
  add(code: string): void {
    if (this.pending.length >= PENDING_LIMIT) {
      if (this.dropped++ === 0) this.deps.log.warn({ limit: PENDING_LIMIT }, 'too many results waiting to be marked published; the result outbox will publish the others again');
      return;
    }
    this.pending.push(code);
    if (this.pending.length >= MARKS_PER_CALL) this.write();
    else this.timer ??= setTimeout(() => this.write(), this.windowMs).unref();
  }

  /** Writes every mark waiting and waits for the writes in flight (at shutdown, before the store closes). */
  async flush(): Promise<void> {
    while (this.pending.length > 0 || this.flights.size > 0) {
      this.write();
      await Promise.race(this.flights);
    }
  }

  private write(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.dropped = 0;
    while (this.pending.length > 0 && this.flights.size < FLIGHTS_LIMIT) {
      const codes = this.pending.splice(0, MARKS_PER_CALL);
      const flight = this.deps.codes
        .markPublished(codes, this.deps.clock.now())
        .catch((err: unknown) => this.deps.log.warn({ err, codes: codes.length }, 'marking results published failed; the result outbox will publish them again'))
        .finally(() => {
          this.flights.delete(flight);
          // Marks that waited for a free flight go now, not a window later.
          if (this.pending.length > 0 && this.timer === undefined) this.write();
        });
      this.flights.add(flight);
    }
  }
}
