import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { Listeners } from '../listeners.js';
import { type Announcement, type AnnouncementListener, type Broker, type BrokerBounds, type DeliveryFallback, epochAt, type HoldOutcome, NONE_AWAITING, PUBLISH_KEY_PATTERN, type PublishOutcome, resumePoint, type StreamRead } from './broker.js';
import { addressKey, type TabAddress } from '../protocol/address.js';
import { forgetTrimmedKeys } from './trimmed-keys.js';
import type { EventFrame, TabEvent } from '../protocol/frames.js';

interface Entry {
  frame: EventFrame;
  at: number;
  fallback: DeliveryFallback | undefined;
  /** The publish key (broker.ts `publish`): a second publish with it answers this entry. */
  key: string | undefined;
}

interface Holder {
  node: string;
  connectedUntil: number;
}

interface Stream {
  epoch: number;
  last: number;
  sent: number;
  entries: Entry[];
  /** An array, not a Map: one holder is the rule (one node), and a Map costs far more per idle tab. */
  holders: Holder[];
  /** Last publish, hold or refresh: a stream nobody holds is kept `idleStreamMs` after it. */
  touched: number;
  /**
   * Made by a publish for a tab no hold of this broker met: its first hold reports it `remade` (the process
   * restarted, and what the stream had before is gone; docs/events.md "Restarts").
   */
  unheld: boolean;
  /**
   * Keyed entries trimmed for the count bound while younger than the age bound, oldest first: a retry of
   * one (it comes within the age bound) answers it instead of appending a copy, as in Redis (`…:kt`).
   * Absent until the first such trim, so an idle tab pays nothing.
   */
  trimmed?: Entry[];
}

/**
 * The broker of one node: the streams and presence in this process's memory, with the semantics of the
 * Redis broker (broker.ts), so one node and a cluster behave alike. Lost when the process stops: after
 * a restart every stream starts a new epoch, and the first hold of each tab reports its stream lost, also
 * when a publish made it first (`writtenKeys` tells its node what was written, kept at a clean stop).
 * Announcements loop back in-process, each in a microtask, so a publisher never re-enters a listener
 * synchronously (the same shape of asynchrony as Redis pub/sub).
 */
export class MemoryBroker implements Broker {
  private readonly streams = new Map<string, Stream>();
  /** node -> alive until (its heartbeat); a holder counts only while its node is alive. */
  private readonly nodes = new Map<string, number>();
  /** This broker's state lives as long as the instance: one generation. */
  private readonly generation = randomUUID();
  private readonly listeners: Listeners<Announcement>;

  /** `log` receives a listener's exception; without one it goes to stderr. Either way the process lives on. */
  constructor(
    private readonly bounds: BrokerBounds,
    log?: Pick<Logger, 'error'>,
  ) {
    this.listeners = new Listeners('broker listener', log);
  }

  async publish(to: TabAddress, event: TabEvent, now: number, fallback?: DeliveryFallback, publishKey?: string): Promise<PublishOutcome> {
    if (publishKey !== undefined && !PUBLISH_KEY_PATTERN.test(publishKey)) throw new Error(`publish key ${JSON.stringify(publishKey)} is not ${PUBLISH_KEY_PATTERN}`);
    const key = addressKey(to);
    let stream = this.live(key, now);
    // A stream holds at most `limit` entries (100 by default): a scan costs less than an index kept per tab.
    const earlier = publishKey === undefined ? undefined : stream && this.earlier(stream, publishKey, now);
    if (earlier) {
      // Told again: the first announcement may be what was lost, and a writer skips an id it wrote.
      this.announce({ to, frame: earlier.frame, awaiting: fallback !== undefined });
      return { frame: earlier.frame, unsent: [], dropped: { overflow: 0, expired: 0 }, duplicate: true };
    }
    if (fallback && !(stream && this.connected(stream, now))) return { frame: undefined, unsent: [], dropped: { overflow: 0, expired: 0 } };
    stream ??= this.create(key, now, true);
    stream.touched = now;
    const frame: EventFrame = { type: event.type, data: event.data, id: ++stream.last };
    stream.entries.push({ frame, at: now, fallback, key: publishKey });
    const trimmed = this.overflow(stream);
    this.keepKeys(stream, trimmed, now);
    const overflow = this.settle(stream, trimmed);
    const expired = this.settle(stream, this.expire(stream, now));
    this.announce({ to, frame, awaiting: fallback !== undefined });
    return { frame, unsent: [...overflow.unsent, ...expired.unsent], dropped: { overflow: overflow.dropped, expired: expired.dropped } };
  }

  subscribe(listener: AnnouncementListener): () => void {
    return this.listeners.add(listener);
  }

  onResume(): () => void {
    // In-process: no announcement is ever missed.
    return () => undefined;
  }

  async read(to: TabAddress, afterId: number | undefined, now: number): Promise<StreamRead> {
    const stream = this.live(addressKey(to), now);
    if (!stream) return { frames: [], last: 0, epoch: 0, lost: afterId !== undefined, unsent: [], expired: 0, awaiting: NONE_AWAITING };
    const expired = this.settle(stream, this.expire(stream, now));
    const first = stream.entries[0]?.frame.id;
    const { cursor, lost } = afterId === undefined ? { cursor: stream.sent, lost: false } : resumePoint(afterId, stream.epoch, first, stream.last);
    const after = stream.entries.filter((e) => e.frame.id > cursor);
    const awaiting = after.some((e) => e.fallback) ? after.filter((e) => e.fallback).map((e) => e.frame.id) : NONE_AWAITING;
    return { frames: after.map((e) => e.frame), last: stream.last, epoch: stream.epoch, lost, unsent: expired.unsent, expired: expired.dropped, awaiting };
  }

  async markSent(to: TabAddress, id: number): Promise<void> {
    const stream = this.streams.get(addressKey(to));
    if (stream && id > stream.sent && id <= stream.last) stream.sent = id;
  }

  async confirm(to: TabAddress, written: { ids: readonly number[] } | { through: number }): Promise<number> {
    const stream = this.streams.get(addressKey(to));
    if (!stream) return 0;
    const through = 'through' in written ? Math.min(written.through, stream.sent) : 0;
    const named = 'ids' in written ? new Set(written.ids) : undefined;
    let confirmed = 0;
    for (const e of stream.entries) {
      if (!e.fallback || !(named ? named.has(e.frame.id) : e.frame.id <= through)) continue;
      e.fallback = undefined;
      confirmed++;
    }
    return confirmed;
  }

  async withdraw(to: TabAddress, ids: readonly number[]): Promise<DeliveryFallback[]> {
    const stream = this.streams.get(addressKey(to));
    if (!stream) return [];
    const taken: DeliveryFallback[] = [];
    const named = new Set(ids);
    stream.entries = stream.entries.filter((e) => {
      if (!e.fallback || !named.has(e.frame.id)) return true;
      taken.push(e.fallback);
      return false;
    });
    return taken;
  }

  async hold(to: TabAddress, node: string, connectedUntil: number, now: number): Promise<HoldOutcome> {
    return this.holdAt(to, node, connectedUntil, now, false);
  }

  /** `hold`; `keepLater`: a later connected time the node gave before stays (`refresh`). */
  private holdAt(to: TabAddress, node: string, connectedUntil: number, now: number, keepLater: boolean): HoldOutcome {
    const key = addressKey(to);
    const existing = this.live(key, now);
    const stream = existing ?? this.create(key, now, false);
    stream.touched = now;
    const remade = stream.unheld;
    stream.unheld = false;
    if (!this.nodes.has(node)) this.nodes.set(node, now + this.bounds.presenceTtlMs);
    const holder = stream.holders.find((h) => h.node === node);
    if (holder) holder.connectedUntil = keepLater ? Math.max(holder.connectedUntil, connectedUntil) : connectedUntil;
    // A literal when it is the first: push onto an empty array reserves room for 16 (~120 B more per idle tab).
    else if (stream.holders.length === 0) stream.holders = [{ node, connectedUntil }];
    else stream.holders.push({ node, connectedUntil });
    return { created: existing === undefined, remade, epoch: stream.epoch };
  }

  async heartbeat(node: string, now: number): Promise<string> {
    for (const [other, aliveUntil] of this.nodes) if (aliveUntil <= now) this.nodes.delete(other);
    this.nodes.set(node, Math.max(this.nodes.get(node) ?? 0, now + this.bounds.presenceTtlMs));
    return this.generation;
  }

  async refresh(tabs: readonly { to: TabAddress; connectedUntil: number }[], node: string, now: number): Promise<TabAddress[]> {
    const lost: TabAddress[] = [];
    for (const { to, connectedUntil } of tabs) {
      const held = this.holdAt(to, node, connectedUntil, now, true);
      if (held.created || held.remade) lost.push(to);
    }
    return lost;
  }

  async drop(to: TabAddress, node: string, now: number): Promise<{ holders: number; unsent: DeliveryFallback[] }> {
    const stream = this.live(addressKey(to), now);
    if (!stream) return { holders: 0, unsent: [] };
    stream.holders = stream.holders.filter((h) => h.node !== node);
    const holders = this.liveHolders(stream, now);
    if (holders > 0) return { holders, unsent: [] };
    // Nobody holds the tab: a stored message is better than one waiting for a tab that may not come back.
    const unsent: DeliveryFallback[] = [];
    stream.entries = stream.entries.filter((e) => {
      if (e.fallback === undefined || e.frame.id <= stream.sent) return true;
      unsent.push(e.fallback);
      return false;
    });
    return { holders, unsent };
  }

  async presence(to: TabAddress, now: number): Promise<{ held: boolean; connected: boolean }> {
    const stream = this.live(addressKey(to), now);
    return { held: stream !== undefined && this.liveHolders(stream, now) > 0, connected: stream !== undefined && this.connected(stream, now) };
  }

  /** Removes streams past their idle time and events past the age bound (the Redis broker's keys expire by themselves). */
  sweep(now: number): { unsent: DeliveryFallback[]; expired: number } {
    const unsent: DeliveryFallback[] = [];
    let expired = 0;
    for (const key of this.streams.keys()) {
      const stream = this.live(key, now);
      if (!stream || stream.entries.length === 0) continue;
      const gone = this.settle(stream, this.expire(stream, now));
      unsent.push(...gone.unsent);
      expired += gone.dropped;
    }
    return { unsent, expired };
  }

  /**
   * The publish keys `accept`ed of the entries published since `since` that were written to a connection (at
   * or before their stream's sent mark), each with its publish time: what a node records at a clean stop, so
   * that the results its pages had are not sent again after its restart (docs/events.md "Restarts").
   */
  writtenKeys(since: number, accept: (key: string) => boolean): { key: string; at: number }[] {
    const out: { key: string; at: number }[] = [];
    for (const stream of this.streams.values()) {
      for (const e of [...(stream.trimmed ?? []), ...stream.entries]) {
        if (e.key !== undefined && e.at >= since && e.frame.id <= stream.sent && accept(e.key)) out.push({ key: e.key, at: e.at });
      }
    }
    return out;
  }

  /** Streams kept (diagnostics and tests). */
  get size(): number {
    return this.streams.size;
  }

  async close(): Promise<void> {
    this.streams.clear();
    this.listeners.clear();
  }

  private announce(announcement: Announcement): void {
    this.listeners.tellSoon(announcement);
  }

  /** The stream, unless it has passed its idle time with nobody holding it (then it is removed). */
  private live(key: string, now: number): Stream | undefined {
    const stream = this.streams.get(key);
    if (!stream) return undefined;
    if (stream.holders.some((h) => !this.alive(h.node, now))) stream.holders = stream.holders.filter((h) => this.alive(h.node, now));
    if (stream.holders.length === 0 && now - stream.touched >= this.bounds.idleStreamMs) {
      this.streams.delete(key);
      return undefined;
    }
    return stream;
  }

  private alive(node: string, now: number): boolean {
    return (this.nodes.get(node) ?? 0) > now;
  }

  private liveHolders(stream: Stream, now: number): number {
    let n = 0;
    for (const holder of stream.holders) if (this.alive(holder.node, now)) n++;
    return n;
  }

  private connected(stream: Stream, now: number): boolean {
    for (const holder of stream.holders) if (holder.connectedUntil > now && this.alive(holder.node, now)) return true;
    return false;
  }

  private create(key: string, now: number, unheld: boolean): Stream {
    const epoch = epochAt(now);
    const stream: Stream = { epoch, last: epoch, sent: epoch, entries: [], holders: [], touched: now, unheld };
    this.streams.set(key, stream);
    return stream;
  }

  /**
   * Entries beyond the count bound, oldest first; a written XMPP message awaiting its confirmation stops
   * the trim (its node settles it within the confirmation deadline; the age bound still applies).
   */
  private overflow(stream: Stream): Entry[] {
    let n = 0;
    while (stream.entries.length - n > this.bounds.limit && !this.awaitingConfirmation(stream, stream.entries[n]!)) n++;
    return stream.entries.splice(0, n);
  }

  /** The entry published under `publishKey`: in the stream, or trimmed for the count bound and still retriable. */
  private earlier(stream: Stream, publishKey: string, now: number): Entry | undefined {
    const found = stream.entries.find((e) => e.key === publishKey);
    if (found || !stream.trimmed) return found;
    stream.trimmed = forgetTrimmedKeys(stream.trimmed, now - this.bounds.maxAgeMs, this.bounds.limit);
    return stream.trimmed?.find((e) => e.key === publishKey);
  }

  private keepKeys(stream: Stream, trimmed: Entry[], now: number): void {
    const cutoff = now - this.bounds.maxAgeMs;
    const keyed = trimmed.filter((e) => e.key !== undefined && e.at >= cutoff);
    if (keyed.length > 0) stream.trimmed = forgetTrimmedKeys([...(stream.trimmed ?? []), ...keyed], cutoff, this.bounds.limit);
  }

  private awaitingConfirmation(stream: Stream, e: Entry): boolean {
    return e.fallback !== undefined && e.frame.id <= stream.sent;
  }

  private expire(stream: Stream, now: number): Entry[] {
    const cutoff = now - this.bounds.maxAgeMs;
    let n = 0;
    while (n < stream.entries.length && stream.entries[n]!.at < cutoff) n++;
    return stream.entries.splice(0, n);
  }

  /**
   * Of the entries that left the stream, the unsent: fallbacks to store (also of a written one never
   * confirmed nor withdrawn: its node is gone), the others counted as dropped.
   */
  private settle(stream: Stream, gone: Entry[]): { unsent: DeliveryFallback[]; dropped: number } {
    const unsent: DeliveryFallback[] = [];
    let dropped = 0;
    for (const e of gone) {
      if (e.fallback) unsent.push(e.fallback);
      else if (e.frame.id > stream.sent) dropped++;
    }
    return { unsent, dropped };
  }
}
