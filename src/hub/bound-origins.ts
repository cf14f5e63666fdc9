import { addressKey, type TabAddress } from '../protocol/address.js';

/** Tabs kept at most (beyond, the map starts over: the next Register of each tab binds it again). */
const BOUND_ORIGINS_SIZE = 50_000;

/**
 * The page origin this node last bound each tab from (per address), so that a repeat Register of a tab held
 * here skips the store unless the page moved to another origin (TabRegistry.register).
 */
export class BoundOrigins {
  private readonly origins = new Map<string, string>();

  /** Whether the stored binding has `origin`, as far as this node knows; a location without an origin (null) changes no binding. */
  matches(address: TabAddress, origin: string | null): boolean {
    return origin === null || this.origins.get(addressKey(address)) === origin;
  }

  /** The tab was bound from `origin` (a null origin left the stored one as it was). */
  bound(address: TabAddress, origin: string | null): void {
    if (origin === null) return;
    if (this.origins.size >= BOUND_ORIGINS_SIZE) this.origins.clear();
    this.origins.set(addressKey(address), origin);
  }

  forget(address: TabAddress): void {
    this.origins.delete(addressKey(address));
  }
}
