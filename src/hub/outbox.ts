import type { EventFrame, TabEvent } from '../protocol/frames.js';

interface Entry {
  frame: EventFrame;
  at: number;
  sent: boolean;
}

/**
 * Per-tab event log above the transports (STYLE.md: buffering sits above the transport, so
 * switching transport loses nothing). Gives each event the tab's next id, keeps the newest
 * `limit` events no older than `maxAgeMs`, and tells which ones a (re)connecting client still needs.
 */
export class Outbox {
  private entries: Entry[] = [];
  private nextId: number;
  /** Events dropped because the outbox was full (oldest first). */
  overflowed = 0;

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

  /** Appends an event and returns its frame. */
  push(event: TabEvent, now: number): EventFrame {
    const frame: EventFrame = { type: event.type, data: event.data, id: this.nextId++ };
    this.entries.push({ frame, at: now, sent: false });
    if (this.entries.length > this.limit) {
      this.entries.splice(0, this.entries.length - this.limit);
      this.overflowed++;
    }
    return frame;
  }

  /**
   * Frames a connection should get now, oldest first. With `afterId` (the client says what it saw),
   * everything newer is resent, including frames written to a connection that died; without it,
   * only frames never written.
   */
  pending(now: number, afterId?: number): EventFrame[] {
    this.expire(now);
    return this.entries
      .filter((e) => (afterId === undefined ? !e.sent : e.frame.id > afterId))
      .map((e) => e.frame);
  }

  markSent(frames: readonly EventFrame[]): void {
    const ids = new Set(frames.map((f) => f.id));
    for (const entry of this.entries) if (ids.has(entry.frame.id)) entry.sent = true;
  }

  /** Drops entries older than the age bound; returns how many unsent ones were lost. */
  expire(now: number): number {
    const cutoff = now - this.maxAgeMs;
    let lost = 0;
    while (this.entries.length > 0 && this.entries[0]!.at < cutoff) {
      if (!this.entries.shift()!.sent) lost++;
    }
    return lost;
  }

  get size(): number {
    return this.entries.length;
  }
}
