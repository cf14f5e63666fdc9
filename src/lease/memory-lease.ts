import type { Lease, LeaseHold } from './lease.js';

/** Time for leases: monotonic (immune to wall-clock steps), in milliseconds. */
export type MonotonicNow = () => number;

/**
 * The leases of one process: a single node takes every lease at once; several "nodes" made in one
 * process (tests) share one table and compete as nodes on Redis would.
 */
export class MemoryLeaseTable {
  private readonly holds = new Map<string, LeaseHold & { expiresAt: number }>();
  private readonly fences = new Map<string, number>();
  /** Holds that ran out and were neither taken over nor released since (see `lapsed`). */
  private readonly ranOut = new Map<string, LeaseHold & { expiresAt: number }>();

  constructor(readonly now: MonotonicNow = () => performance.now()) {}

  /** The lease `name` as `holder` sees it. */
  lease(name: string, holder: string, ttlMs: number): Lease {
    return new MemoryLease(this, name, holder, ttlMs);
  }

  /** @internal The live hold of `name`, expired ones removed. */
  live(name: string): (LeaseHold & { expiresAt: number }) | undefined {
    const hold = this.holds.get(name);
    if (hold && hold.expiresAt <= this.now()) {
      this.holds.delete(name);
      this.ranOut.set(name, hold);
      return undefined;
    }
    return hold;
  }

  /**
   * @internal The hold of `name` by `holder` under `token` that ran out while nobody else took the lease, put
   * back (renew); undefined when the lease was taken meanwhile or released.
   */
  lapsed(name: string, holder: string, token: number): (LeaseHold & { expiresAt: number }) | undefined {
    const hold = this.ranOut.get(name);
    if (this.holds.has(name) || hold?.holder !== holder || hold.token !== token) return undefined;
    this.ranOut.delete(name);
    this.holds.set(name, hold);
    return hold;
  }

  /** @internal */
  set(name: string, hold: (LeaseHold & { expiresAt: number }) | undefined): void {
    this.ranOut.delete(name);
    if (hold) this.holds.set(name, hold);
    else this.holds.delete(name);
  }

  /** @internal The next fencing token of `name`. */
  nextToken(name: string): number {
    const token = (this.fences.get(name) ?? 0) + 1;
    this.fences.set(name, token);
    return token;
  }
}

/** A lease in a MemoryLeaseTable (the reference implementation of Lease). */
export class MemoryLease implements Lease {
  readonly scope = 'process';

  constructor(
    private readonly table: MemoryLeaseTable,
    readonly name: string,
    readonly holder: string,
    readonly ttlMs: number,
  ) {}

  async acquire(): Promise<number | undefined> {
    const hold = this.table.live(this.name);
    if (hold && hold.holder !== this.holder) return undefined;
    const token = hold?.token ?? this.table.nextToken(this.name);
    this.table.set(this.name, { holder: this.holder, token, expiresAt: this.table.now() + this.ttlMs });
    return token;
  }

  async renew(token: number): Promise<boolean> {
    // A hold past its end that no other holder took is still this holder's: nobody acted under another token
    // in between, so extending it is safe. Without this, a single node whose event loop stalled past the TTL
    // (a loaded machine) stepped down from its own leases and dropped its XMPP stream for nothing.
    const hold = this.table.live(this.name) ?? this.table.lapsed(this.name, this.holder, token);
    if (!hold || hold.holder !== this.holder || hold.token !== token) return false;
    hold.expiresAt = this.table.now() + this.ttlMs;
    return true;
  }

  async release(token: number): Promise<boolean> {
    const hold = this.table.live(this.name);
    if (!hold || hold.holder !== this.holder || hold.token !== token) return false;
    this.table.set(this.name, undefined);
    return true;
  }

  async current(): Promise<LeaseHold | undefined> {
    const hold = this.table.live(this.name);
    return hold && { holder: hold.holder, token: hold.token };
  }
}
