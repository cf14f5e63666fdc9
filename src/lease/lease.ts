/** Who holds a lease now, and the fencing token of that hold. */
export interface LeaseHold {
  holder: string;
  token: number;
}

/**
 * A named lease with a time to live, held by at most one holder at a time (docs/redis.md "Leases").
 * A hold ends when released, or `ttlMs` after it was last acquired or renewed. Each new hold gets a
 * fencing token greater than every earlier hold's of the same lease, so a resource that can compare
 * tokens refuses a holder that lost its lease without noticing (Kleppmann's fencing token).
 * One Lease object acts for one holder (`holder`, e.g. the node id).
 * Implementations: memory-lease.ts (the nodes of one process), redis-lease.ts (a cluster).
 */
export interface Lease {
  readonly name: string;
  readonly holder: string;
  readonly ttlMs: number;
  /**
   * Who can compete for it: the nodes of one process (`process`: an embedded node always gets it, so taking
   * it is not news) or every node of a cluster (`cluster`: which node runs the work is worth a log line).
   */
  readonly scope: 'process' | 'cluster';
  /**
   * Takes the lease when nobody holds it and answers the new hold's token; when this holder holds it
   * already, extends it and answers the same token; otherwise answers undefined and changes nothing.
   */
  acquire(): Promise<number | undefined>;
  /** Extends the hold `token` by `ttlMs` from now; false (and nothing changed) when that hold is over. */
  renew(token: number): Promise<boolean>;
  /** Ends the hold `token` now; false when it was over already (a stale holder never ends a newer hold). */
  release(token: number): Promise<boolean>;
  /** The current hold, if any. */
  current(): Promise<LeaseHold | undefined>;
}

/** Makes the leases of one node: same holder id, one per name. */
export type LeaseFactory = (name: string, ttlMs: number) => Lease;
