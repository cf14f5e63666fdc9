import type { Logger } from 'pino';
import type { Broker } from '../broker/broker.js';
import type { DeliveryFallback } from '../broker/broker.js';
import { disconnects } from './disconnect.js';
import { addressKey, type TabAddress } from '../protocol/address.js';
import type { TabConnection } from './connection.js';

/** "Everything written to the tab so far" for `Broker.confirm` (the broker caps it at its sent mark). */
const ALL_WRITTEN = Number.MAX_SAFE_INTEGER;

/** One write of XMPP messages to a connection, not confirmed yet. */
interface Written {
  address: TabAddress;
  connection: TabConnection;
  ids: readonly number[];
  /** Unconfirmed past this time (clock ms), the connection is declared dead. */
  deadline: number;
}

/** What confirmations call: the broker, time, log, and the hub's hooks. */
export interface ConfirmationsDeps {
  broker: Broker;
  now: () => number;
  log: Logger;
  /** Messages withdrawn unconfirmed: store them for PopMessages. */
  fallBack: (fallbacks: readonly DeliveryFallback[]) => void;
  /** A connection was declared dead (and closed): the tab no longer counts as connected through it. */
  declaredDead: (address: TabAddress, connection: TabConnection) => void;
}

/**
 * The XMPP messages this node wrote to connections and their clients have not confirmed yet (docs/xmpp.md
 * "Delivered means confirmed"). A write is settled once, in the broker, where a confirmation and a
 * withdrawal of the same message cannot both win: confirmed (the WebSocket's pong, the tab's next poll),
 * it counts as delivered; its connection ended, or the deadline passed first, it is withdrawn from the
 * tab's stream and stored. Only writes of messages are kept here, so tabs that get none cost nothing.
 */
export class Confirmations {
  private readonly pending = new Set<Written>();
  /**
   * Confirmed writes per tab, sent to the broker together at the end of the turn: one pong confirms every
   * write of its burst at once, so the burst costs one broker call, not one per message.
   */
  private readonly confirmed = new Map<string, { address: TabAddress; ids: number[] }>();

  /** `deadlineMs`: how long a write may wait for its confirmation (config `messageConfirmSeconds`). */
  constructor(
    private readonly deps: ConfirmationsDeps,
    private readonly deadlineMs: number,
  ) {}

  /** `ids` (messages carrying a fallback) were just written to `connection`: ask its client to confirm them. */
  written(address: TabAddress, connection: TabConnection, ids: readonly number[]): void {
    const write: Written = { address, connection, ids, deadline: this.deps.now() + this.deadlineMs };
    this.pending.add(write);
    connection.confirm?.((reached) => void this.settle(write, reached));
  }

  /**
   * A client connects again and so tells what reached it before: up to its `lastEventId`, or, for a poll
   * without one, everything written to the tab so far (a long-poll client polls again once it has handled
   * an answer). XMPP messages among them count as delivered, on whichever node wrote them.
   */
  async received(address: TabAddress, transport: TabConnection['transport'], lastEventId: number | undefined): Promise<void> {
    const through = lastEventId ?? (transport === 'long-poll' ? ALL_WRITTEN : undefined);
    if (through === undefined) return;
    try {
      await this.deps.broker.confirm(address, { through });
      this.forgetPolls(address, through);
    } catch (err) {
      // Unconfirmed, the writing node's deadline withdraws and stores them: stored, never lost.
      this.deps.log.warn({ err }, 'confirming what a client received failed');
    }
  }

  /** The broker confirmed what the tab's earlier polls here were written: those records are done. */
  private forgetPolls(address: TabAddress, through: number): void {
    for (const write of this.pending) {
      if (write.connection.transport !== 'long-poll' || write.address.tabId !== address.tabId || write.address.session !== address.session) continue;
      if (write.ids.every((id) => id <= through)) this.pending.delete(write);
    }
  }

  /** Messages written to the tab's connections here that await their confirmation (diagnostics and tests). */
  count(address: TabAddress): number {
    let n = 0;
    for (const write of this.pending) if (write.address.tabId === address.tabId && write.address.session === address.session) n += write.ids.length;
    return n;
  }

  /**
   * Writes unconfirmed past the deadline: the connection is declared dead (a frozen browser keeps its
   * socket open and never answers) and closed, and the messages are withdrawn and stored.
   */
  sweep(): void {
    const now = this.deps.now();
    for (const write of this.pending) {
      if (write.deadline > now) continue;
      void this.settle(write, false);
      if (write.connection.open) write.connection.close(disconnects.confirmTimeout);
      // A frozen peer never finishes the closing handshake: the tab must not count as connected meanwhile,
      // or the next message would be written into the same socket instead of being stored.
      this.deps.declaredDead(write.address, write.connection);
    }
  }

  /** Shutdown: nothing can confirm any more, so every message still awaiting is withdrawn and stored. */
  async settleAll(): Promise<void> {
    await Promise.all([...this.pending].map((write) => this.settle(write, false)));
  }

  private async settle(write: Written, reached: boolean): Promise<void> {
    if (!this.pending.delete(write)) return;
    if (reached) return this.batchConfirmation(write);
    try {
      this.deps.fallBack(await this.deps.broker.withdraw(write.address, write.ids));
    } catch (err) {
      // The broker keeps the fallback on the event: when it ages out of the stream it is stored then.
      this.deps.log.warn({ err, tabId: write.address.tabId }, 'withdrawing an unconfirmed message failed');
    }
  }

  private batchConfirmation(write: Written): void {
    const key = addressKey(write.address);
    const batch = this.confirmed.get(key);
    if (batch) return void batch.ids.push(...write.ids);
    this.confirmed.set(key, { address: write.address, ids: [...write.ids] });
    if (this.confirmed.size === 1) queueMicrotask(() => this.flushConfirmations());
  }

  private flushConfirmations(): void {
    const batches = [...this.confirmed.values()];
    this.confirmed.clear();
    for (const { address, ids } of batches) {
      // Unconfirmed in the broker, the event keeps its fallback: stored when it ages out (delivered and stored).
      this.deps.broker.confirm(address, { ids }).catch((err: unknown) => this.deps.log.warn({ err, tabId: address.tabId }, 'confirming a delivered message failed'));
    }
  }
}
