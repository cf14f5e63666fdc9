/**
 * Results a node with its streams in memory (one node without Redis) had written to their pages when it stopped,
 * by publish key (hub/delivery.ts `resultPublishKey`). Its streams are gone after the restart, and the results
 * of recent logins are sent again to each tab that comes back (docs/events.md "Restarts"): these are left out,
 * so a page gets each result once across a clean restart. Written once per stop, read by that replay only.
 */
export interface WrittenResultStore {
  /** Stores the keys, each kept until its `expiresAt` (a key stored already takes the new one). */
  remember(written: readonly { key: string; expiresAt: number }[]): Promise<void>;
  /** Which of `keys` are stored and unexpired at `now`. */
  writtenAmong(keys: readonly string[], now: number): Promise<Set<string>>;
  /** Removes keys that expired before `before`; returns how many. */
  deleteExpired(before: number): Promise<number>;
}
