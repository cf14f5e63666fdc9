/**
 * One node's counts of one rate limit, decided here without asking anyone (docs/redis.md "Limits").
 *
 * Per key, a fixed window and three numbers: `view`, the cluster's total the last sync answered (this
 * node's pushed hits included); `inflight`, hits of this node being pushed now; `pending`, hits of this
 * node not pushed yet. A hit is admitted while `view + inflight + pending < max` and, while the cluster
 * is reachable, while `inflight + pending < share`: a node never holds more than one share of unpushed
 * hits of a key. That is what bounds the cluster: a sync that finds the total at or past the limit closes
 * the key on that node for the rest of the window, so each node can go past the limit by at most the
 * share it held unpushed when the limit was reached, and N nodes admit at most `max + N × share − 1` per
 * window, however late or unevenly the syncs run.
 *
 * While the cluster is unreachable (`shared` false) the share does not apply: the node counts on its own,
 * against the whole limit (at most N × max across N nodes), and pushes what it counted once Redis answers.
 */
export interface LedgerEntry {
  key: string;
  /** When this window ends (this node's clock); a sync adopts the cluster's end. */
  windowEnd: number;
  view: number;
  inflight: number;
  pending: number;
  /** The share of this key's limit (`shareOf(max)`, as last hit). */
  share: number;
}

/** What a hit gets: admitted or not, a count the plugin compares with `max`, and the milliseconds until retrying can help. */
export interface Decision {
  admitted: boolean;
  current: number;
  ttl: number;
}

/** A share of `max` each node may hold unpushed: a tenth, at least one. */
export const shareOf = (max: number): number => Math.max(1, Math.ceil(max / 10));

/**
 * Pending hits that make a key due for the next sync: half its share. Pushing every key hit since the last
 * sync would cost Redis about one update per waiting page's refresh (each refresh, 2 s apart, lands in its
 * own 1-s sync); at half a share a page at 30 refreshes a minute against the default 300 is pushed every 30 s.
 * Fewer pending hits wait: they count against this node's share only, which the bound already allows, and
 * the key is pushed before a hit could be refused for a full share.
 */
const dueAt = (share: number): number => Math.ceil(share / 2);

export class ShareLedger {
  private readonly entries = new Map<string, LedgerEntry>();
  /** Entries with hits not pushed yet (what the next sync sends). */
  private readonly dirty = new Set<LedgerEntry>();

  /**
   * @param capacity keys kept (least recently hit forgotten first: forgetting only loses a count, so it can
   *   never refuse anyone wrongly)
   * @param syncMs how often the node syncs: a hit refused for a full share may succeed after the next sync
   */
  constructor(
    private readonly capacity: number,
    private readonly syncMs: number,
  ) {}

  hit(key: string, now: number, windowMs: number, max: number, shared: boolean): Decision {
    const entry = this.entry(key, now, windowMs);
    const unpushed = entry.inflight + entry.pending;
    const total = entry.view + unpushed;
    if (total >= max) return { admitted: false, current: max + 1, ttl: entry.windowEnd - now };
    // RFC 6585 §4: a share refusal ends with this node's next sync, not with the window.
    if (shared && unpushed >= shareOf(max)) return { admitted: false, current: max + 1, ttl: Math.min(this.syncMs, entry.windowEnd - now) };
    entry.pending++;
    entry.share = shareOf(max);
    if (entry.pending >= dueAt(entry.share)) this.dirty.add(entry);
    return { admitted: true, current: total + 1, ttl: entry.windowEnd - now };
  }

  /** Moves the pending hits of every entry due (half a share waiting) to in flight and hands them out to be pushed, with how many. */
  take(): { entry: LedgerEntry; pushed: number }[] {
    const taken = [...this.dirty].map((entry) => ({ entry, pushed: entry.pending }));
    this.dirty.clear();
    for (const { entry, pushed } of taken) {
      entry.inflight += pushed;
      entry.pending = 0;
    }
    return taken;
  }

  /** A push of `pushed` hits succeeded: the cluster's total is `total`, its window ends in `ttl` ms. */
  settle(entry: LedgerEntry, pushed: number, total: number, ttl: number, now: number): void {
    entry.inflight -= pushed;
    // An entry forgotten or restarted meanwhile keeps its own (newer) window.
    if (this.entries.get(entry.key) !== entry) return;
    entry.view = total;
    entry.windowEnd = now + ttl;
  }

  /** A push failed: its hits are pending again, to be pushed by a later sync. */
  restore(entry: LedgerEntry, pushed: number): void {
    entry.inflight -= pushed;
    entry.pending += pushed;
    if (this.entries.get(entry.key) === entry) this.dirty.add(entry);
  }

  get size(): number {
    return this.entries.size;
  }

  private entry(key: string, now: number, windowMs: number): LedgerEntry {
    let entry = this.entries.get(key);
    if (entry && now < entry.windowEnd) {
      // Least recently used last: Map keeps insertion order.
      this.entries.delete(key);
      this.entries.set(key, entry);
      return entry;
    }
    if (entry) {
      this.entries.delete(key);
      this.dirty.delete(entry);
    }
    entry = { key, windowEnd: now + windowMs, view: 0, inflight: 0, pending: 0, share: 1 };
    if (this.entries.size >= this.capacity) {
      const oldest = this.entries.values().next().value!;
      this.entries.delete(oldest.key);
      this.dirty.delete(oldest);
    }
    this.entries.set(key, entry);
    return entry;
  }
}
