import type { Logger } from 'pino';
import type { DeliveryFallback } from '../bus/bus.js';
import type { Clock } from '../clock.js';
import type { Config } from '../config/schema.js';
import type { TabAddress } from '../protocol/address.js';
import { refreshTabBindings, tabBindingRefreshMs } from '../hub/binding-refresh.js';
import { Hub } from '../hub/hub.js';
import { TabRegistry } from '../hub/registry.js';
import type { Metrics } from '../metrics.js';
import { redisUnavailable } from '../redis/errors.js';
import { EventTypes } from '../protocol/events.js';
import { intervals, type Lifecycle } from './area.js';
import type { SharedState } from './shared.js';

const HUB_SWEEP_MS = 5_000;
/** How often unconfirmed XMPP messages are checked against their deadline (a no-op while none await one). */
const CONFIRM_CHECK_MS = 1_000;
/** How often a cluster node holds a share of its tabs again (each tab once per the hub's roll time). */
const ROLL_EVERY_MS = 1_000;
/** The reference client polls again at once after an answer, or 5 s after an error. */
const LONG_POLL_GAP_MS = 10_000;
/**
 * A cookie-less QR request that beats its tab's Register waits this long for it: the reference script asks
 * at once or after 500 ms, and a first visit's handshake on a slow network takes seconds (docs/events.md).
 */
const TAB_REGISTRATION_WAIT_MS = 10_000;

/** What other areas do when a tab's events cannot reach it, or a tab is let go: made before the events area (wiring/agent.ts createAgentTabState). */
export interface TabHooks {
  /** An XMPP event its tab could not take: stored for PopMessages. */
  storeUndelivered(fallback: DeliveryFallback): Promise<void>;
  /** The tab's XMPP handlers go with it. */
  forgetHandlers(address: TabAddress): void;
  /** The tabs this node holds are alive (their handlers must not expire). */
  touchHandlers(addresses: readonly TabAddress[]): void;
}

export interface EventsArea extends Lifecycle {
  hub: Hub;
  registry: TabRegistry;
  /** First step of shutdown: closes every tab connection now. Idempotent. */
  closeConnections(): void;
}

/** The client event channel's domain: this node's live tabs (hub) and tab registration (docs/events.md). */
export function createEventsArea(o: { config: Config; shared: SharedState; clock: Clock; metrics: Metrics; log: Logger; instanceId: string; hooks: TabHooks }): EventsArea {
  const { config, shared, clock, log, hooks } = o;
  const { store, bus, broker } = shared;
  // Store writes the hub's hooks start and nobody awaits: the store must stay open until they are done.
  const writes = new Set<Promise<void>>();
  const track = (write: Promise<void>): void => {
    const tracked = write.finally(() => writes.delete(tracked));
    writes.add(tracked);
  };
  const hub: Hub = new Hub({
    bus,
    broker,
    node: shared.nodeId,
    clock,
    log: log.child({ module: 'hub' }),
    tabIdleMs: config.tabIdleSeconds * 1000,
    longPollGapMs: LONG_POLL_GAP_MS,
    presenceTtlMs: shared.presenceTtlMs,
    rollEveryMs: ROLL_EVERY_MS,
    outboxMaxAgeMs: config.outboxMaxAgeSeconds * 1000,
    messageConfirmMs: config.messageConfirmSeconds * 1000,
    maxTabsPerSession: config.tabsPerSession,
    // Pages remember the first id and reload when a later one differs (docs/events.md "Restarts").
    greeting: () => ({ type: EventTypes.CheckServerInstance, data: o.instanceId }),
    counters: o.metrics.hubCounters,
    onFallback: (fallback) => {
      track(hooks.storeUndelivered(fallback).catch((err: unknown) => log.error({ err }, 'storing an undelivered message failed')));
    },
    // On release the registry removes the binding itself (awaited before the connection's next frame).
    onRelease: (address) => hooks.forgetHandlers(address),
    // No node holds the tab any more: its handlers go, and its binding if it is still this session's.
    onForget: (address) => {
      hooks.forgetHandlers(address);
      track(registry.removeBinding(address).catch((err: unknown) => log.error({ err, tabId: address.tabId }, 'removing a tab binding failed')));
    },
    onStreamLost: (address) => registry.streamLost(address),
  });
  o.metrics.watchHub(() => hub.snapshot());
  const registry = new TabRegistry({
    tabs: store.tabs,
    codes: store.codes,
    hub,
    clock,
    resultReplayMs: config.outboxMaxAgeSeconds * 1000,
    registrationWaitMs: TAB_REGISTRATION_WAIT_MS,
    tabIdleMs: config.tabIdleSeconds * 1000,
    // Redis errors of the broker are an outage of the shared state (docs/redis.md "During a Redis outage").
    ...(shared.redis ? { sharedUnavailable: redisUnavailable } : {}),
  });
  const timers = intervals(
    [() => hub.sweep(), HUB_SWEEP_MS],
    [() => hub.checkConfirmations(), CONFIRM_CHECK_MS],
    [
      () => {
        refreshTabBindings(hub, store.tabs, clock).catch((err: unknown) => log.error({ err }, 'tab binding refresh failed'));
        hooks.touchHandlers(hub.heldAddresses());
      },
      tabBindingRefreshMs(config.tabBindingRetentionSeconds * 1000),
    ],
    // A shared broker forgets a node unless its heartbeat goes on (a node that died lets go this way),
    // and a held tab's stream unless the tab is held again now and then (a few tabs every second).
    ...(shared.clustered
      ? ([
          [() => void heartbeat(), shared.presenceTtlMs / 3],
          [() => hub.roll().catch((err: unknown) => log.warn({ err }, 'presence roll failed')), ROLL_EVERY_MS],
        ] as [() => void, number][])
      : []),
  );
  const heartbeat = () => hub.refresh().catch((err: unknown) => log.warn({ err }, 'presence heartbeat failed'));
  return {
    hub,
    registry,
    closeConnections: () => hub.close(),
    start: () => {
      timers.start();
      if (shared.clustered) void heartbeat();
    },
    // Before the store closes (areas stop in reverse order; the shared area, with the store, comes last).
    async stop() {
      await timers.stop();
      await hub.stop();
      await Promise.all(writes);
    },
  };
}
