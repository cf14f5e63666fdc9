import type { Clock } from '../clock.js';

/**
 * Counts login attempts per key (account, client address) in a fixed window. An attempt takes a
 * slot *before* the password is checked (`reserve`), so concurrent attempts cannot all pass the
 * check while the slow scrypt of the first ones runs: at most `limit` attempts per key and window
 * ever reach the password check. A failed attempt keeps its slot; `release` gives one back
 * (an attempt that proved nothing wrong), `reset` forgets the key (a correct password).
 * One node's view: in a cluster each node throttles on its own (docs/agent-api.md).
 */
export class FailureThrottle {
  private readonly windows = new Map<string, { start: number; used: number }>();

  constructor(
    private readonly clock: Clock,
    readonly limit: number,
    private readonly windowMs: number,
  ) {}

  /** Milliseconds until `key` may try again, or 0 when it has a free slot now. */
  retryAfterMs(key: string): number {
    const window = this.current(key);
    if (!window || window.used < this.limit) return 0;
    return Math.max(1, window.start + this.windowMs - this.clock.now());
  }

  /** Takes a slot for `key`; the caller checked `retryAfterMs(key) === 0` in the same turn. */
  reserve(key: string): void {
    const window = this.current(key);
    if (window) window.used++;
    else this.windows.set(key, { start: this.clock.now(), used: 1 });
    if (this.windows.size > 100_000) this.prune();
  }

  /** Gives back one slot taken by `reserve` (if its window is still the current one). */
  release(key: string): void {
    const window = this.current(key);
    if (!window) return;
    if (window.used <= 1) this.windows.delete(key);
    else window.used--;
  }

  /** Forgets every attempt of `key` (a correct password). */
  reset(key: string): void {
    this.windows.delete(key);
  }

  private current(key: string) {
    const window = this.windows.get(key);
    if (window && this.clock.now() - window.start >= this.windowMs) {
      this.windows.delete(key);
      return undefined;
    }
    return window;
  }

  /** Bounded memory under a spray of user names or addresses. */
  private prune(): void {
    for (const key of this.windows.keys()) this.current(key);
  }
}
