import type { Clock } from '../clock.js';

/**
 * Counts failures per key (account, client address) in a fixed window. When a key reaches its
 * limit, it is blocked until the window that saw its first failure ends. One node's view: in a
 * cluster each node throttles on its own (documented in docs/agent-api.md).
 */
export class FailureThrottle {
  private readonly windows = new Map<string, { start: number; failures: number }>();

  constructor(
    private readonly clock: Clock,
    private readonly limit: number,
    private readonly windowMs: number,
  ) {}

  /** Milliseconds until `key` may try again, or 0 when it may now. */
  retryAfterMs(key: string): number {
    const window = this.current(key);
    if (!window || window.failures < this.limit) return 0;
    return window.start + this.windowMs - this.clock.now();
  }

  fail(key: string): void {
    const window = this.current(key);
    if (window) window.failures++;
    else this.windows.set(key, { start: this.clock.now(), failures: 1 });
    if (this.windows.size > 100_000) this.prune();
  }

  succeed(key: string): void {
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
