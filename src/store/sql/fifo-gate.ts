/**
 * One holder at a time, the others served in the order they came, each woken alone. Kysely's SQLite
 * driver guards its one connection with a mutex that wakes every waiter on each release, and all but one
 * go back to waiting: with n queries queued that is O(n²) (12,000 queries at once took 4.3 s, 355 µs each;
 * a node handing back 12,000 tabs at shutdown spent 7.4 s there). In front of it, this gate lets one query
 * at a time reach that mutex, which then never has a waiter.
 */
export class FifoGate {
  private held = false;
  /** Waiters from `head` on, oldest first (a queue without O(n) shifts). */
  private waiting: (() => void)[] = [];
  private head = 0;

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
    if (this.head < this.waiting.length) {
      const next = this.waiting[this.head]!;
      this.waiting[this.head++] = undefined as unknown as () => void;
      if (this.head === this.waiting.length) {
        this.waiting = [];
        this.head = 0;
      } else if (this.head >= 1024 && this.head * 2 >= this.waiting.length) {
        this.waiting = this.waiting.slice(this.head);
        this.head = 0;
      }
      next();
      return;
    }
    this.held = false;
  }

  /** Callers waiting for the gate (diagnostics and tests). */
  get queued(): number {
    return this.waiting.length - this.head;
  }
}
