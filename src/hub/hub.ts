import { AnnouncementFailed, type Announcement, type DeliveryFallback } from '../broker/broker.js';
import { disconnects } from './disconnect.js';
import type { EventFrame, TabEvent } from '../protocol/frames.js';
import type { TabAddress } from '../protocol/address.js';
import { DEFAULT_ROLL_EVERY_MS, DEFAULT_ROLL_MS, PresenceKeeper, type HeldTab } from './presence-keeper.js';
import { PublishRetry } from './publish-retry.js';
import { ReloadResume } from './reload-resume.js';
import type { TabConnection } from './connection.js';
import { hasOpen, inTabOrder, prune, type LocalTab } from './local-tab.js';
import { addConnection, connectedUntil } from './tab-connections.js';
import { TabWriter } from './tab-writer.js';
import { Confirmations } from './confirmations.js';
import { newPublishKey, type Delivery } from './delivery.js';
import type { AttachOutcome, HubDeps, HubSettings, HubSnapshot } from './hub-options.js';
import { LocalTabs } from './local-tabs.js';

export type { AttachOutcome, DropReason, HubCounters, HubDeps, HubSettings, HubSnapshot } from './hub-options.js';
export { MAX_CONNECTIONS_PER_TAB } from './tab-connections.js';

/** Events refused by an unreachable broker that a node holds for another try, at most (beyond: dropped, counted). */
const MAX_HELD_EVENTS = 10_000;
/** Default of `messageConfirmMs` (config `messageConfirmSeconds`). */
const DEFAULT_MESSAGE_CONFIRM_MS = 10_000;

/** How `Hub.publish` sends one event: see `deliver` (`fallback`, `key`, `onTakenLater`) and the retry queue (`retrying`). */
interface PublishHow {
  fallback?: DeliveryFallback | undefined;
  key: string;
  retrying: boolean;
  onTakenLater?: (() => void) | undefined;
}

/**
 * The local hub: the live connections of this node's tabs. Events live in the broker's per-tab
 * streams (broker.ts); `deliver` publishes there, the broker announces the new event with its append to the
 * nodes that have the tab connected, and each of them writes it. One node and a cluster run the same path. Tabs are
 * kept per address (tab id and session), so an event only ever reaches the session it was addressed
 * to (docs/events.md).
 */
export class Hub implements Delivery {
  private readonly tabs = new LocalTabs();
  private readonly unsubscribe: () => void;
  private readonly stopResume: () => void;
  private closed = false;
  /** The hand-over `close` started (shutdown); `stop` waits for it. */
  private handingOver: Promise<void> | undefined;
  /** Tabs being forgotten after `sweep` (their hooks may still write to the store): `stop` waits for them. */
  private readonly forgetting = new Set<Promise<void>>();

  /** Events the broker refused (unreachable), offered again by `sweep` (publish-retry.ts). */
  private readonly retry: PublishRetry;
  /** This node's presence in a shared broker: the heartbeat and the rolling re-hold. */
  private readonly presence: PresenceKeeper;
  /** Writes events to the tabs' connections here, from announcements and the streams. */
  private readonly writer: TabWriter;
  /** What a page reloading on its greeting was written, for its next Register (reload-resume.ts). */
  private readonly reloads: ReloadResume;
  /** XMPP messages written here whose confirmation is awaited (docs/xmpp.md "Delivered means confirmed"). */
  private readonly confirmations: Confirmations;

  constructor(
    private readonly deps: HubDeps,
    private readonly settings: HubSettings,
  ) {
    this.reloads = new ReloadResume(() => deps.clock.now(), settings.outboxMaxAgeMs);
    this.confirmations = new Confirmations(
      {
        broker: deps.broker,
        now: () => deps.clock.now(),
        log: deps.log,
        fallBack: (fallbacks) => this.fallBack(fallbacks),
        declaredDead: (address, connection) => this.letGo(address, connection),
      },
      settings.messageConfirmMs ?? DEFAULT_MESSAGE_CONFIRM_MS,
    );
    this.writer = new TabWriter({
      broker: deps.broker,
      now: () => deps.clock.now(),
      log: deps.log,
      fallBack: (fallbacks) => this.fallBack(fallbacks),
      dropped: (reason, n) => deps.counters?.dropped(reason, n),
      awaiting: (address, connection, ids) => this.confirmations.written(address, connection, ids),
      // Its hold then reports whether the stream was lost (`onLost`); never awaited here: the writer runs
      // serially per tab, and `onLost` queues a catch-up behind it.
      remade: (tab) => {
        this.presence
          .holdAgain({ to: tab.address, connectedUntil: connectedUntil(tab, this.settings.longPollGapMs) })
          .catch((err: unknown) => deps.log.warn({ err, tabId: tab.address.tabId }, 'holding a tab whose stream was made again failed'));
      },
    });
    this.unsubscribe = deps.broker.subscribe((announcement) => this.onAnnouncement(announcement));
    // Announcements missed while the broker's subscription was away are not lost: open connections read their
    // streams again. A broker that was away may have lost its state, and with it whom to announce to: the
    // heartbeat goes now rather than at its time, so a lost presence is held again (and read) at once.
    this.stopResume = deps.broker.onResume(() => {
      this.catchUpOpen();
      this.refresh().catch((err: unknown) => deps.log.warn({ err }, 'presence heartbeat after a resubscription failed'));
    });
    this.retry = new PublishRetry(
      {
        publish: (to, event, key) => this.publish(to, event, { key, retrying: true }).then(() => undefined),
        now: () => deps.clock.now(),
        onGivenUp: (n) => deps.counters?.dropped('unreachable', n),
      },
      { maxAgeMs: settings.outboxMaxAgeMs, limit: MAX_HELD_EVENTS },
    );
    this.presence = new PresenceKeeper(
      {
        broker: deps.broker,
        now: () => deps.clock.now(),
        held: () => this.held(),
        count: () => this.tabs.size,
        onLost: (address) => {
          // The broker had lost the tab's stream: its connections are told, results may be derived again.
          const tab = this.tabs.get(address);
          if (tab) void this.serially(tab, () => this.writer.catchUpAll(tab, { remade: true }));
          this.deps.onStreamLost?.(address);
        },
        // The broker may have let this node's tabs go (a late heartbeat, Redis lost its state): it announced
        // their events to nobody here until they were held again, so open connections read their streams.
        onReheld: () => this.catchUpOpen(),
      },
      {
        node: settings.node,
        presenceTtlMs: settings.presenceTtlMs,
        rollMs: settings.rollMs ?? DEFAULT_ROLL_MS,
        rollEveryMs: settings.rollEveryMs ?? DEFAULT_ROLL_EVERY_MS,
      },
    );
  }

  /**
   * Sends an event to a tab of a session wherever it is connected. Order kept per address; a client
   * that resumes after an id gets what followed it, within the stream's bounds. With a `fallback`,
   * an event that cannot be written to a live connection (none now, overflow, age, the broker
   * unreachable) is handed to `onFallback` instead of being lost. The event's publish key (`key`, or
   * one made here) goes with every retry, so a publish that timed out but ran is not run twice.
   */
  async deliver(to: TabAddress, event: TabEvent, fallback?: DeliveryFallback, key: string = newPublishKey(), onTakenLater?: () => void): Promise<boolean> {
    if (!fallback && this.retry.holds(to)) {
      this.retry.add(to, event, key, onTakenLater);
      return false;
    }
    return this.publish(to, event, { fallback, key, retrying: false, onTakenLater });
  }

  /** `retrying`: the retry queue offers a held event again; a refusal is thrown back to it. */
  private async publish(to: TabAddress, event: TabEvent, how: PublishHow): Promise<boolean> {
    const { fallback, key, retrying, onTakenLater } = how;
    let outcome;
    try {
      outcome = await this.deps.broker.publish(to, event, this.deps.clock.now(), fallback, key);
    } catch (err) {
      // Appended but not announced: what the append pushed out unsent is stored all the same.
      if (err instanceof AnnouncementFailed) this.fallBack(err.outcome.unsent);
      if (retrying) throw err;
      this.deps.log.warn({ err }, 'the broker did not take an event');
      // An XMPP message is stored instead; any other event is offered again, in order, within the age bound.
      if (fallback) this.fallBack([fallback]);
      else this.retry.add(to, event, key, onTakenLater);
      return false;
    }
    this.fallBack(outcome.unsent);
    if (outcome.dropped.overflow > 0) this.deps.counters?.dropped('overflow', outcome.dropped.overflow);
    if (outcome.dropped.expired > 0) this.deps.counters?.dropped('expired', outcome.dropped.expired);
    if (!outcome.frame) {
      this.fallBack([fallback!]);
      return false;
    }
    // The broker tells the nodes that have the tab connected (a duplicate again too); each writes it from there.
    if (!outcome.duplicate) this.deps.counters?.delivered();
    return true;
  }

  /**
   * Adds `connection` to the tab's live connections and writes what the tab has missed to it.
   * `lastEventId` is the last id the client says it saw; without one the connection gets what no
   * connection got yet. A connection that closed meanwhile (the client left during its Register) is
   * not attached.
   */
  async attach(address: TabAddress, connection: TabConnection, lastEventId?: number): Promise<AttachOutcome> {
    const now = this.deps.clock.now();
    const here = this.tabs.get(address);
    const tab = here ?? this.tabs.create(address, now, this.settings.maxTabsPerSession);
    if (!tab) return 'too_many_tabs';
    tab.lastSeen = now;
    const open = connection.open;
    if (open && !tab.connections.has(connection)) addConnection(tab, connection);
    if (open) tab.transport = connection.transport;
    const { created, remade } = await this.deps.broker.hold(address, this.settings.node, connectedUntil(tab, this.settings.longPollGapMs), now);
    // Before the catch-up, which moves the sent mark past what this very connection is about to get.
    if (open) await this.confirmations.received(address, connection.transport, lastEventId);
    if (open) {
      const websocket = connection.transport === 'websocket';
      // A client the tab has written to before resumes after what it got, even events another page took; a
      // page that reloaded on its greeting resumes where the page before it started (reload-resume.ts).
      const cursor =
        lastEventId ??
        (connection.client === undefined ? undefined : tab.cursors?.get(connection.client)) ??
        (websocket ? this.reloads.resumeAfter(address) : undefined);
      const greeting = this.deps.greeting !== undefined && (created || websocket) ? (this.deps.greeting() as EventFrame) : undefined;
      // The first poll of a tab new to this node whose stream holds events (a restart, a return after the
      // idle time) is answered [] at once: a reference page may reload on that answer (its first 200 after an
      // error answer) and would lose what it carried. Its next poll, at once, gets them. A new stream is
      // empty: that poll is greeted as before.
      const quiet = !websocket && here === undefined && !created && cursor === undefined;
      await this.serially(tab, async () => {
        if (quiet && (await this.writer.pending(tab)) && connection.open && connection.send([]) && !connection.open) return;
        const from = await this.writer.catchUp(tab, connection, cursor);
        // Told to this connection only, after what it missed, and not kept in the stream (no id): it is
        // about the connection, not an event of the tab. A new stream is empty, so a first poll is still open.
        if (greeting === undefined || !connection.open) return;
        connection.send([greeting]);
        if (websocket && from !== undefined) this.reloads.greetedSocket(address, connection, from);
      });
      // A Register or poll served while the node stops (a kept-alive connection) gets what it missed and is
      // then closed as every connection was: the page goes on on another node.
      if (this.closed) connection.close(disconnects.shutdown);
    }
    return created || remade ? 'created' : 'attached';
  }

  /**
   * A QR request bound the tab before its page connected (a first visit): the tab is held here without a
   * connection, as a registered tab whose page left is, so it counts toward its session's tabsPerSession
   * and is forgotten (with its binding) after tabIdleMs unless a connection attaches.
   */
  async reserve(address: TabAddress): Promise<'held' | 'too_many_tabs'> {
    if (this.tabs.has(address)) return 'held';
    const now = this.deps.clock.now();
    const tab = this.tabs.create(address, now, this.settings.maxTabsPerSession);
    if (!tab) return 'too_many_tabs';
    await this.deps.broker.hold(address, this.settings.node, connectedUntil(tab, this.settings.longPollGapMs), now);
    return 'held';
  }

  /** The connection went away; the tab stays here until it is idle for tabIdleMs. */
  detach(address: TabAddress, connection: TabConnection): void {
    const tab = this.tabs.get(address);
    if (!tab?.connections.delete(connection)) return;
    const now = this.deps.clock.now();
    tab.lastSeen = now;
    if (hasOpen(tab)) return;
    // The last connection here left: tell the broker until when the tab still counts as connected here.
    this.deps.broker.hold(address, this.settings.node, connectedUntil(tab, this.settings.longPollGapMs), now).catch((err: unknown) => this.deps.log.warn({ err }, 'presence update failed'));
  }

  /** A connection declared dead (its closing handshake may never end): the tab no longer counts as connected through it. */
  private letGo(address: TabAddress, connection: TabConnection): void {
    const tab = this.tabs.get(address);
    if (!tab) return;
    tab.connections.delete(connection);
    if (hasOpen(tab)) return;
    this.deps.broker.hold(address, this.settings.node, connectedUntil(tab, this.settings.longPollGapMs), this.deps.clock.now()).catch((err: unknown) => this.deps.log.warn({ err }, 'presence update failed'));
  }

  /** A ping or poll: the tab is alive (`connection`: the one that pinged; its page stayed after its greeting). */
  touch(address: TabAddress, connection?: TabConnection): void {
    if (connection !== undefined) this.reloads.stayed(connection);
    const tab = this.tabs.get(address);
    if (tab) tab.lastSeen = this.deps.clock.now();
  }

  /**
   * The page said goodbye (Unregister). The tab id is free for any session from now on; what is
   * already addressed to this session waits in its stream (within the usual bounds) in case the same
   * session registers the tab again, as a reloading page does.
   */
  async release(address: TabAddress, connection?: TabConnection): Promise<void> {
    // `connection` said goodbye: a page that may be reloading on its greeting (reload-resume.ts).
    if (connection !== undefined) this.reloads.left(address, connection);
    const tab = this.tabs.get(address);
    if (tab) this.tabs.remove(tab);
    this.deps.onRelease?.(address);
    await this.dropPresence(address);
  }

  /** Whether some node holds the tab for the session (registered, not released or forgotten). */
  async holds(address: TabAddress): Promise<boolean> {
    return (await this.deps.broker.presence(address, this.deps.clock.now())).held;
  }

  /** Whether an event for the address would be written to a connection now (or, for long-poll, at the next poll), on any node. */
  async isConnected(address: TabAddress): Promise<boolean> {
    return (await this.deps.broker.presence(address, this.deps.clock.now())).connected;
  }

  /** Whether this node holds the tab for the session (registered here, not released or forgotten). */
  holdsHere(address: TabAddress): boolean {
    return this.tabs.has(address);
  }

  /** Whether the tab has a live connection on this node (or a long-poll within its gap). */
  isConnectedHere(address: TabAddress): boolean {
    const tab = this.tabs.get(address);
    return tab !== undefined && connectedUntil(tab, this.settings.longPollGapMs) > this.deps.clock.now();
  }

  /** One tab's state on this node (diagnostics and tests): live connections now, last sign of life. */
  state(address: TabAddress): { held: boolean; connected: boolean; connections: number; lastSeen: number; awaitingConfirmation: number } | undefined {
    const tab = this.tabs.get(address);
    if (!tab) return undefined;
    prune(tab);
    const awaitingConfirmation = this.confirmations.count(address);
    return { held: true, connected: tab.connections.size > 0, connections: tab.connections.size, lastSeen: tab.lastSeen, awaitingConfirmation };
  }

  /**
   * Declares dead the connections whose XMPP messages are unconfirmed past `messageConfirmMs` (closed
   * with 4408) and stores those messages. Called on a timer (every second) and by tests with a moved clock.
   */
  checkConfirmations(): void {
    this.confirmations.sweep();
  }

  /** Forgets idle tabs here. Called on a timer and by tests with a moved clock. */
  sweep(): void {
    const now = this.deps.clock.now();
    const aged = this.deps.broker.sweep(now);
    this.fallBack(aged.unsent);
    if (aged.expired > 0) this.deps.counters?.dropped('expired', aged.expired);
    if (this.retry.pending > 0) void this.retry.retry();
    this.reloads.sweep();
    for (const tab of [...this.tabs.values()]) {
      if (hasOpen(tab) || now - tab.lastSeen < this.settings.tabIdleMs) continue;
      this.tabs.remove(tab);
      const forgotten: Promise<void> = this.forget(tab.address)
        .catch((err: unknown) => this.deps.log.warn({ err, tabId: tab.address.tabId }, 'forgetting a tab failed'))
        .finally(() => this.forgetting.delete(forgotten));
      this.forgetting.add(forgotten);
    }
  }

  /**
   * The node's heartbeat in the broker (every third of `presenceTtlMs`): it keeps all of the node's tabs.
   * When the broker may have let them go (first beat, a beat too late, the broker lost its state) every
   * tab is held again; tabs whose stream was lost get `EventsLost` on their connections and `onStreamLost`.
   */
  async refresh(): Promise<void> {
    await this.presence.beat();
  }

  /** Holds a share of the tabs again, so the broker keeps each tab's stream (called every `rollEveryMs`). */
  async roll(): Promise<void> {
    await this.presence.roll();
  }

  snapshot(): HubSnapshot {
    let connected = 0;
    for (const tab of this.tabs.values()) if (hasOpen(tab)) connected++;
    return { tabs: this.tabs.size, connected };
  }

  /** The tabs held here with until when each counts as connected, made as they are read. */
  private *held(): Generator<HeldTab> {
    for (const tab of this.tabs.values()) yield { to: tab.address, connectedUntil: connectedUntil(tab, this.settings.longPollGapMs) };
  }

  /** Addresses of the tabs held here. */
  heldAddresses(): TabAddress[] {
    return [...this.tabs.values()].map((tab) => tab.address);
  }

  /** Tab ids held here (their bindings are refreshed in the store). */
  heldTabIds(): string[] {
    return [...this.tabs.values()].map((tab) => tab.address.tabId);
  }

  /**
   * Shutdown (docs/deployment.md "Stopping a node"): closes every connection, so pages reconnect to
   * another node at once, and starts handing the tabs over (`stop` waits for it). Idempotent.
   */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.unsubscribe();
    this.stopResume();
    for (const tab of this.tabs.values()) tab.connections.forEach((_, connection) => connection.close(disconnects.shutdown));
    this.handingOver = this.handOver();
  }

  /** After `close`: resolves once every tab is handed over and the hub's own work on the store is done. */
  async stop(): Promise<void> {
    this.close();
    await this.handingOver;
    // Tabs a Register attached while the node was stopping.
    await this.handOver();
    await Promise.all(this.forgetting);
  }

  /**
   * The node lets its tabs go without forgetting them: the broker is told it holds them no more (the
   * stream stays for the session, events nobody got that have a fallback are stored), but the tabs'
   * bindings and handlers stay. The page is reconnecting to another node, which binds the tab again for
   * the same session; removing the binding here, while that node binds it, would look to it like another
   * session's tab (4403). A tab whose page never comes back has its binding purged after
   * `tabBindingRetentionSeconds` and its handlers expire, as after a crash.
   */
  private async handOver(): Promise<void> {
    // Nothing can confirm any more: what awaited a confirmation is stored (docs/xmpp.md "Delivered means confirmed").
    await this.confirmations.settleAll();
    const tabs = this.tabs.clear();
    await Promise.all(tabs.map((tab) => this.dropPresence(tab.address).catch((err: unknown) => this.deps.log.warn({ err, tabId: tab.address.tabId }, 'handing a tab over at shutdown failed'))));
  }

  /** This node let the tab go; when no node holds it any more, what hangs on it goes too. */
  private async forget(address: TabAddress): Promise<void> {
    if ((await this.dropPresence(address)) === 0) this.deps.onForget?.(address);
  }

  private async dropPresence(address: TabAddress): Promise<number> {
    const { holders, unsent } = await this.deps.broker.drop(address, this.settings.node, this.deps.clock.now());
    this.fallBack(unsent);
    return holders;
  }

  private onAnnouncement({ to, frame, awaiting }: Announcement): void {
    const tab = this.tabs.get(to);
    this.deps.counters?.announced?.(tab !== undefined);
    if (!tab || !hasOpen(tab)) return;
    void this.serially(tab, () => this.writer.writeNew(tab, frame, awaiting));
  }

  /** Every open connection here reads its tab's stream after its cursor (announcements may have been missed). */
  private catchUpOpen(): void {
    for (const tab of this.tabs.values()) if (hasOpen(tab)) void this.serially(tab, () => this.writer.catchUpAll(tab));
  }

  /** Runs `work` after the tab's earlier work; a failure is logged, never passed on to later work. */
  private serially(tab: LocalTab, work: () => Promise<void>): Promise<void> {
    return inTabOrder(tab, work, (err) => this.deps.log.warn({ err, tabId: tab.address.tabId }, 'writing to a tab failed'));
  }

  private fallBack(fallbacks: readonly DeliveryFallback[]): void {
    if (fallbacks.length === 0) return;
    for (const fallback of fallbacks) this.deps.onFallback(fallback);
    this.deps.counters?.fellBack(fallbacks.length);
  }
}
