import type { Logger } from 'pino';
import { NONE_AWAITING, type Broker, type StreamRead } from '../broker/broker.js';
import type { DeliveryFallback } from '../broker/broker.js';
import { EventTypes } from '../protocol/events.js';
import type { EventFrame } from '../protocol/frames.js';
import type { TabAddress } from '../protocol/address.js';
import type { TabConnection } from './connection.js';
import { prune, type LocalTab } from './local-tab.js';

/** What the writer calls: the broker, time, log, and the hub's hooks (all of them dependencies). */
export interface TabWriterDeps {
  broker: Broker;
  now: () => number;
  log: Logger;
  /** Events that left a stream unsent with a fallback (an XMPP message): store them. */
  fallBack: (fallbacks: readonly DeliveryFallback[]) => void;
  /** Events that left a stream unsent without one (metrics). */
  dropped: (reason: 'expired', n: number) => void;
  /** Events carrying a fallback (XMPP messages) were written to a connection: their confirmation is awaited. */
  awaiting: (address: TabAddress, connection: TabConnection, ids: readonly number[]) => void;
  /**
   * A connection's cursor is of an earlier epoch than the tab's stream: the stream was made again (by an
   * append, or a read, after it was lost) without this node's hold having reported it.
   */
  remade: (tab: LocalTab) => void;
}

/**
 * Writes a tab's events to its connections on this node, each in id order from its own cursor: a new
 * event as the broker announces it, what a connection missed read from the tab's stream (docs/events.md "Event
 * streams"). The hub runs these per tab one after another, so no two interleave.
 */
export class TabWriter {
  constructor(private readonly deps: TabWriterDeps) {}

  /**
   * A new event of the tab: written to each connection whose cursor is just before it; a gap is read from
   * the stream. `awaiting`: it carries a fallback, so each write of it awaits its confirmation.
   */
  async writeNew(tab: LocalTab, frame: EventFrame, awaiting = false): Promise<void> {
    prune(tab);
    let behind = false;
    let written = 0;
    const ids = awaiting ? [frame.id] : NONE_AWAITING;
    tab.connections.forEach((cursor, connection) => {
      if (cursor === undefined || frame.id <= cursor) return;
      if (frame.id === cursor + 1) {
        if (this.write(tab, connection, [frame], undefined, ids)) written = frame.id;
      } else behind = true;
    });
    if (written > 0) this.markSent(tab.address, written);
    // Another node's event came first, or an announcement was missed: the stream has them all.
    if (behind) await this.catchUpAll(tab);
  }

  /**
   * Writes to every ready connection what follows its cursor, from one read after the lowest cursor. A
   * connection whose events after its cursor are gone (trimmed, expired, or its stream was made again)
   * is told with `EventsLost` first. A stream made again is reported (`remade`) unless the caller knows it
   * (`known`: a hold reported it).
   */
  async catchUpAll(tab: LocalTab, known: { remade: boolean } = { remade: false }): Promise<void> {
    let lowest: number | undefined;
    tab.connections.forEach((cursor) => {
      if (cursor !== undefined) lowest = lowest === undefined ? cursor : Math.min(lowest, cursor);
    });
    if (lowest === undefined) return;
    const read = await this.read(tab.address, lowest);
    // No stream at all (the broker lost it and nothing made it again yet): the presence refresh or the
    // next event makes one, and the catch-up then tells each connection once. A stream a fail-over's check let
    // go may have held events nobody was written, a login's result among them, and a quiet tab may see no next
    // event: it is held again at once, which makes the stream and has its results derived again.
    if (read.epoch === 0) {
      if (read.letGo && !known.remade) this.deps.remade(tab);
      return;
    }
    let written = 0;
    let remade = false;
    tab.connections.forEach((cursor, connection) => {
      if (cursor === undefined) return;
      if (cursor < read.epoch) remade = true;
      const sameEpoch = cursor >= read.epoch && cursor <= read.last;
      const frames = sameEpoch ? read.frames.filter((f) => f.id > cursor) : read.frames;
      const lost = sameEpoch ? (frames.length > 0 ? frames[0]!.id > cursor + 1 : cursor < read.last) : true;
      const out = lost ? [this.lostFrame(cursor, read.epoch), ...frames] : frames;
      if (out.length === 0) return;
      if (this.write(tab, connection, out, read.last, read.awaiting) && frames.length > 0) written = Math.max(written, frames.at(-1)!.id);
    });
    if (written > 0) this.markSent(tab.address, written);
    if (remade && !known.remade) this.deps.remade(tab);
  }

  /**
   * The first write to a connection: what follows `cursor` (or what nobody got), then it follows the stream.
   * Resolves with the stream position before everything this connection is written (undefined: it was not
   * attached), so a page that went away with them can be given them again (reload-resume.ts).
   */
  async catchUp(tab: LocalTab, connection: TabConnection, cursor: number | undefined): Promise<number | undefined> {
    if (!tab.connections.has(connection) || !connection.open) return undefined;
    const read = await this.read(tab.address, cursor);
    const frames = read.lost && cursor !== undefined ? [this.lostFrame(cursor, read.epoch), ...read.frames] : read.frames;
    const from = read.frames.length > 0 ? read.frames[0]!.id - 1 : read.last;
    if (frames.length === 0) {
      tab.connections.set(connection, read.last);
      return from;
    }
    if (this.write(tab, connection, frames, read.last, read.awaiting) && read.frames.length > 0) this.markSent(tab.address, read.frames.at(-1)!.id);
    return from;
  }

  /** Whether the tab's stream holds events no connection was written yet. */
  async pending(tab: LocalTab): Promise<boolean> {
    return (await this.read(tab.address, undefined)).frames.length > 0;
  }

  private async read(address: TabAddress, afterId: number | undefined): Promise<StreamRead> {
    const read = await this.deps.broker.read(address, afterId, this.deps.now());
    this.deps.fallBack(read.unsent);
    if (read.expired > 0) this.deps.dropped('expired', read.expired);
    return read;
  }

  private lostFrame(after: number, epoch: number): EventFrame {
    // No id: it is about this client's resumption, not an event of the tab's stream.
    return { type: EventTypes.EventsLost, data: { after, epoch } } as EventFrame;
  }

  /**
   * Writes frames to one connection and moves its cursor to `through` (the stream's newest id) or to the
   * last frame's id. A connection that can take no more (an answered long-poll) leaves the tab. Those of
   * the frames whose id is in `awaiting` (XMPP messages) now await the client's confirmation.
   */
  private write(tab: LocalTab, connection: TabConnection, frames: readonly EventFrame[], through?: number, awaiting: readonly number[] = NONE_AWAITING): boolean {
    if (!connection.send(frames)) {
      tab.connections.delete(connection);
      return false;
    }
    if (awaiting.length > 0) {
      const written = frames.filter((f) => awaiting.includes(f.id)).map((f) => f.id);
      if (written.length > 0) this.deps.awaiting(tab.address, connection, written);
    }
    const ids = frames.filter((f) => typeof f.id === 'number').map((f) => f.id);
    const last = Math.max(through ?? 0, ...ids);
    if (tab.connections.has(connection)) tab.connections.set(connection, last);
    if (connection.client !== undefined && ids.length > 0) (tab.cursors ??= new WeakMap()).set(connection.client, Math.max(...ids));
    prune(tab);
    return true;
  }

  private markSent(address: TabAddress, id: number): void {
    this.deps.broker.markSent(address, id).catch((err: unknown) => this.deps.log.warn({ err }, 'marking events sent failed'));
  }
}
