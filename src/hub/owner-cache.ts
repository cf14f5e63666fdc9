/** How long a looked-up tab owner is trusted without asking the store again. */
const OWNER_CACHE_MS = 2_000;
/** Owners kept at most (beyond, the cache starts over: bounded memory). */
const OWNER_CACHE_SIZE = 50_000;

/**
 * tab id -> owning session, each entry for OWNER_CACHE_MS: a node asks the store who owns a tab at most that
 * often (TabRegistry.requireOwner): a tab's owner changes rarely, and this node forgets the entry when it changes it.
 */
export class OwnerCache {
  private readonly entries = new Map<string, { session: string; at: number }>();
  constructor(private readonly now: () => number) {}
  get(tabId: string): string | undefined {
    const entry = this.entries.get(tabId);
    if (!entry) return undefined;
    if (this.now() - entry.at < OWNER_CACHE_MS) return entry.session;
    this.entries.delete(tabId);
    return undefined;
  }
  set(tabId: string, session: string): void {
    if (this.entries.size >= OWNER_CACHE_SIZE) this.entries.clear();
    this.entries.set(tabId, { session, at: this.now() });
  }
  delete(tabId: string): void {
    this.entries.delete(tabId);
  }
}
