import type { DeliveryFallback } from '../bus/bus.js';
import type { EventFrame, TabEvent } from '../protocol/frames.js';

interface Entry {
  frame: EventFrame;
  at: number;
  sent: boolean;
  fallback: DeliveryFallback | undefined;
}

/** An event that left the outbox without ever being written to a connection. */
export interface UnsentEvent {
  frame: EventFrame;
  fallback: DeliveryFallback | undefined;
}

/**
 * Per-tab event log above the transports (buffering sits above the transport, so switching
 * transport loses nothing). Gives each event the tab's next id, keeps the newest `limit` events no
 * older than `maxAgeMs`, and tells which ones a (re)connecting client still needs. Whatever it
 * drops unsent is handed back, so the hub can count it and send it to its fallback.
 */
export class Outbox {
  private entries: Entry[] = [];
  private nextId: number;

  /**
   * `firstId` derives from the creation time (hub: ms × 1000): a tab that is forgotten and registered
   * again starts above every id it had before (unless it took over 1000 events per millisecond of its
   * life), so a client that de-duplicates by id never drops a new event as already seen. Stays below
   * 2^53 until the year 2255.
   */
  constructor(
    private readonly limit: number,
    private readonly maxAgeMs: number,
    firstId = 1,
  ) {
    this.nextId = firstId;
  }

  /** Appends an event; returns the unsent events pushed out by the count bound (oldest first). */
  push(event: TabEvent, now: number, fallback?: DeliveryFallback): UnsentEvent[] {
    const frame: EventFrame = { type: event.type, data: event.data, id: this.nextId++ };
    this.entries.push({ frame, at: now, sent: false, fallback });
    if (this.entries.length <= this.limit) return [];
    return unsent(this.entries.splice(0, this.entries.length - this.limit));
  }

  /**
   * Frames a connection should get now, oldest first. With `afterId` (the client says what it saw),
   * everything newer is resent, including frames written to a connection that died; without it,
   * only frames never written. Call `expire` first to apply the age bound.
   */
  pending(afterId?: number): EventFrame[] {
    return this.entries.filter((e) => (afterId === undefined ? !e.sent : e.frame.id > afterId)).map((e) => e.frame);
  }

  markSent(frames: readonly EventFrame[]): void {
    const ids = new Set(frames.map((f) => f.id));
    for (const entry of this.entries) if (ids.has(entry.frame.id)) entry.sent = true;
  }

  /** Drops entries older than the age bound; returns the ones dropped unsent. */
  expire(now: number): UnsentEvent[] {
    const cutoff = now - this.maxAgeMs;
    let n = 0;
    while (n < this.entries.length && this.entries[n]!.at < cutoff) n++;
    return n === 0 ? [] : unsent(this.entries.splice(0, n));
  }

  /** Empties the outbox (the tab is forgotten); returns what was never sent. */
  drain(): UnsentEvent[] {
    return unsent(this.entries.splice(0));
  }

  get size(): number {
    return this.entries.length;
  }
}

const unsent = (entries: Entry[]): UnsentEvent[] => entries.filter((e) => !e.sent).map(({ frame, fallback }) => ({ frame, fallback }));
