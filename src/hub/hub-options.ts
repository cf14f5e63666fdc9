import type { Logger } from 'pino';
import type { Broker, DeliveryFallback } from '../broker/broker.js';
import type { Clock } from '../clock.js';
import type { TabEvent } from '../protocol/frames.js';
import type { TabAddress } from '../protocol/address.js';

/** Why an event left a stream unsent and without a fallback (metrics label). */
export type DropReason = 'overflow' | 'expired' | 'unreachable';

/** Running totals the hub reports as they happen (Prometheus counters, metrics.ts). */
export interface HubCounters {
  delivered(): void;
  dropped(reason: DropReason, n: number): void;
  /** Events handed to their fallback (stored for PopMessages) instead of being dropped. */
  fellBack(n: number): void;
  /**
   * The broker told this node of an event: for a tab it holds (`held`), or for one it does not (a tab it
   * let go a moment ago; with routing by presence nearly never).
   */
  announced?(held: boolean): void;
}

/** What the hub calls: the broker, time, its log, and the hooks it tells of what happened to events and tabs. */
export interface HubDeps {
  /** The tabs' streams and presence; the hub publishes events there and writes what it announces. */
  broker: Broker;
  clock: Clock;
  log: Logger;
  /**
   * An event every WebSocket Register (and the first connection of a tab new to the service) is told
   * first: `CheckServerInstance` with the service's instance id, so pages notice a restart.
   */
  greeting?: () => TabEvent;
  counters?: HubCounters;
  /** An event that cannot reach its tab and carries a fallback (an XMPP message): store it. */
  onFallback: (fallback: DeliveryFallback) => void;
  /** The session let the tab go (Unregister): its handlers go now (the registry removes the binding). */
  onRelease?: (address: TabAddress) => void;
  /** No node holds the tab any more: remove what hangs on it (binding, handlers). */
  onForget?: (address: TabAddress) => void;
  /** The broker had lost the stream of a tab held here (results may have to be derived again). */
  onStreamLost?: (address: TabAddress) => void;
}

/** The hub's names, bounds and periods (from the configuration). */
export interface HubSettings {
  /** This node's name in the broker's presence (unique per process). */
  node: string;
  /** A tab with no connection and no sign of life for this long is forgotten here. */
  tabIdleMs: number;
  /** A long-poll tab counts as connected for this long after its last poll was answered. */
  longPollGapMs: number;
  /** The streams' age bound: an event the broker refused is offered again for this long. */
  outboxMaxAgeMs: number;
  /** How long the broker keeps this node's presence without a heartbeat (`refresh` runs well within it). */
  presenceTtlMs: number;
  /** Each tab is held again in the broker within this time (`roll`; docs/events.md "Event streams"). */
  rollMs?: number;
  /** How often `roll` is called (it holds a share of the tabs each time). */
  rollEveryMs?: number;
  /**
   * How long an XMPP message written to a connection waits for the client's confirmation before the
   * connection is declared dead and the message stored (config `messageConfirmSeconds`; default 10 s).
   */
  messageConfirmMs?: number;
  /** Tabs one session may hold on this node (docs/configuration.md `tabsPerSession`). */
  maxTabsPerSession: number;
}

/** Gauges of this node's tabs. */
export interface HubSnapshot {
  tabs: number;
  connected: number;
}

/** `created`: the tab is new to the service (first Register, or its stream was lost); `attached`: it was known. */
export type AttachOutcome = 'created' | 'attached' | 'too_many_tabs';
