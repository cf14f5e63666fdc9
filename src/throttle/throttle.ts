/**
 * Counts login attempts per key (account, client address) in a fixed window (docs/agent-api.md
 * "Throttling"). An attempt takes a slot *before* the password is checked, so concurrent attempts
 * cannot all pass the check while the slow scrypt of the first ones runs: at most `limit` attempts
 * per key and window ever reach the password check, across every node sharing the throttle.
 * Implementations: memory-throttle.ts (one node), redis-throttle.ts (a cluster).
 */
export interface LoginThrottle {
  readonly limit: number;
  /**
   * Takes a slot for `key` when one is free and answers 0; otherwise takes nothing and answers the
   * milliseconds until the window ends (≥ 1). Atomic: N concurrent calls on a key with k free slots
   * answer 0 exactly k times.
   */
  take(key: string): Promise<number>;
  /** Gives back one slot taken by `take` (if its window is still the current one). */
  release(key: string): Promise<void>;
  /** Forgets every attempt of `key` (a correct password). */
  reset(key: string): Promise<void>;
}
