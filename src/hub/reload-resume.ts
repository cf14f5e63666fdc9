import { addressKey, type TabAddress } from '../protocol/address.js';
import type { TabConnection } from './connection.js';

/**
 * Results that die with a page reloading on its greeting (docs/events.md "Restarts"). The newer reference
 * event script remembers the first `CheckServerInstance` id it is told and reloads the page when a later
 * one differs; events written to the socket just before or after that greeting die with the old page, and
 * the reloaded page (same tab id, same cookie, a Register without `lastEventId`) would get only what no
 * connection got yet. So the first WebSocket of a tab greeted on this node (within `keepMs`: a page that
 * may know another instance's id) is *watched*: if it sends `Unregister` (the reference script does on
 * `beforeunload`) within RELOAD_WINDOW_MS of its greeting without a `Ping` in between, the next Register
 * of the same tab and session without `lastEventId` resumes where that socket started, so it gets again
 * what the old page was written. Only watched sockets are resumed this way, and a tab greeted here
 * lately is not watched again, so a page reloading for its own reasons never gets the same event over
 * and over. Node-local and bounded in count; a reloaded page whose Register reaches another node of a
 * cluster gets only what no connection got.
 */

/** An Unregister this soon after the greeting, without a Ping between, may be a reload because of it. */
export const RELOAD_WINDOW_MS = 5_000;
/** Entries kept at most per map (beyond, the oldest go first: bounded memory). */
const MAX_ENTRIES = 50_000;

/** A Map whose entries carry a time and go when older than `keepMs`, or oldest first beyond MAX_ENTRIES. */
class TimedMap<V> {
  private readonly entries = new Map<string, { value: V; at: number }>();
  constructor(private readonly keepMs: number) {}
  set(key: string, value: V, now: number): void {
    this.entries.delete(key);
    if (this.entries.size >= MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(key, { value, at: now });
  }
  get(key: string, now: number): V | undefined {
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    if (now - entry.at <= this.keepMs) return entry.value;
    this.entries.delete(key);
    return undefined;
  }
  take(key: string, now: number): V | undefined {
    const value = this.get(key, now);
    this.entries.delete(key);
    return value;
  }
  /** Removes the entries older than `keepMs`: they are in insertion order, which `set` keeps by time. */
  prune(now: number): void {
    for (const [key, entry] of this.entries) {
      if (now - entry.at <= this.keepMs) return;
      this.entries.delete(key);
    }
  }
}

export class ReloadResume {
  /** Addresses greeted over WebSocket on this node lately: their pages know this instance's id. */
  private readonly greeted: TimedMap<true>;
  /** Watched sockets: the stream position before what they were written, and when they were greeted. */
  private readonly watched = new WeakMap<TabConnection, { from: number; at: number }>();
  /** Where the next Register of an address resumes (a watched socket's page went away). */
  private readonly resumes: TimedMap<number>;

  constructor(
    private readonly now: () => number,
    /** How long an address counts as greeted, and a resume point is kept (the stream's age bound). */
    keepMs: number,
  ) {
    this.greeted = new TimedMap(keepMs);
    this.resumes = new TimedMap(keepMs);
  }

  /** Where a Register without `lastEventId` resumes, once, if the address's last watched page went away. */
  resumeAfter(address: TabAddress): number | undefined {
    return this.resumes.take(addressKey(address), this.now());
  }

  /** A WebSocket of `address` was greeted; `from` is the stream position before everything written to it. */
  greetedSocket(address: TabAddress, connection: TabConnection, from: number): void {
    const key = addressKey(address);
    const now = this.now();
    const known = this.greeted.get(key, now) !== undefined;
    this.greeted.set(key, true, now);
    if (!known) this.watched.set(connection, { from, at: now });
  }

  /** Forgets what is past `keepMs` (the hub's sweep): the maps hold what the last `keepMs` greeted, not every tab. */
  sweep(): void {
    const now = this.now();
    this.greeted.prune(now);
    this.resumes.prune(now);
  }

  /** The socket sent a Ping: its page stayed after the greeting. */
  stayed(connection: TabConnection): void {
    this.watched.delete(connection);
  }

  /** The socket's page said goodbye (Unregister). */
  left(address: TabAddress, connection: TabConnection): void {
    const watch = this.watched.get(connection);
    if (watch === undefined) return;
    this.watched.delete(connection);
    const now = this.now();
    if (now - watch.at <= RELOAD_WINDOW_MS) this.resumes.set(addressKey(address), watch.from, now);
  }
}
