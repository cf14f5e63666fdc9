import type { Clock } from '../clock.js';
import type { LoginThrottle } from './throttle.js';

/**
 * The login throttle of one node (the reference implementation of LoginThrottle): fixed windows in
 * a map, bounded by pruning expired windows past 100,000 keys. The window starts at the first slot
 * taken and lasts `windowMs` on `clock`.
 */
export class MemoryLoginThrottle implements LoginThrottle {
  private readonly windows = new Map<string, { start: number; used: number }>();

  constructor(
    private readonly clock: Clock,
    readonly limit: number,
    private readonly windowMs: number,
  ) {}

  async take(key: string): Promise<number> {
    return this.takeNow(key);
  }

  async release(key: string): Promise<void> {
    this.releaseNow(key);
  }

  async reset(key: string): Promise<void> {
    this.windows.delete(key);
  }

  /** `take` without the promise, for a caller that needs the answer in the same turn (the Redis throttle's fallback). */
  takeNow(key: string): number {
    const window = this.current(key);
    if (window && window.used >= this.limit) return Math.max(1, window.start + this.windowMs - this.clock.now());
    if (window) window.used++;
    else this.windows.set(key, { start: this.clock.now(), used: 1 });
    if (this.windows.size > 100_000) this.prune();
    return 0;
  }

  releaseNow(key: string): void {
    const window = this.current(key);
    if (!window) return;
    if (window.used <= 1) this.windows.delete(key);
    else window.used--;
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
