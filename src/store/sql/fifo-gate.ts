import { FifoQueue } from '../../fifo-queue.js';

/**
 * One holder at a time, the others served in the order they came, each woken alone. Kysely's SQLite
 * driver guards its one connection with a mutex that wakes every waiter on each release, and all but one
 * go back to waiting: with n queries queued that is O(n²) (12,000 queries at once took 4.3 s, 355 µs each;
 * a node handing back 12,000 tabs at shutdown spent 7.4 s there). In front of it, this gate lets one query
 * at a time reach that mutex, which then never has a waiter.
 */
export class FifoGate {
  private held = false;
  /** Waiters, oldest first. */
  private readonly waiting = new FifoQueue<() => void>();

  /** Resolves when the caller holds the gate; it must `release` it once done. */
  acquire(): Promise<void> {
    if (!this.held) {
      this.held = true;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  /** Hands the gate to the oldest waiter, or opens it. */
  release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.held = false;
  }

  /** Callers waiting for the gate (diagnostics and tests). */
  get queued(): number {
    return this.waiting.length;
  }
}
