import type { Logger } from 'pino';
import type { DeliveryFallback } from '../broker/broker.js';
import { MemoryBroker } from '../broker/memory-broker.js';
import { serveWebSocket } from '../channel/websocket.js';
import { WebSocketUpgrade } from '../channel/websocket-upgrade.js';
import { decideUpgrade, eventsRoutes } from '../http/events-routes.js';
import { eventsScriptRoutes } from '../http/events-script-routes.js';
import { rawProblemResponse } from '../http/problem.js';
import type { Clock } from '../clock.js';
import type { Config } from '../config/schema.js';
import type { TabAddress } from '../protocol/address.js';
import { refreshTabBindings, tabBindingRefreshMs } from '../hub/binding-refresh.js';
import { isResultPublishKey } from '../hub/delivery.js';
import { Hub } from '../hub/hub.js';
import { TabRegistry } from '../hub/registry.js';
import type { Metrics } from '../metrics.js';
import { redisUnavailable } from '../redis/errors.js';
import { EventTypes } from '../protocol/events.js';
import { intervals, type Area } from './area.js';
import type { SharedState } from './shared.js';

const HUB_SWEEP_MS = 5_000;
/** How often unconfirmed XMPP messages are checked against their deadline (a no-op while none await one). */
const CONFIRM_CHECK_MS = 1_000;
/** Kept past a result's replay window, for a restart whose clock reads a little earlier. */
const WRITTEN_RESULT_MARGIN_MS = 60_000;
/** How often a cluster node holds a share of its tabs again (each tab once per the hub's roll time). */
const ROLL_EVERY_MS = 1_000;
/** The reference client polls again at once after an answer, or 5 s after an error. */
const LONG_POLL_GAP_MS = 10_000;
/**
 * A cookie-less QR request that beats its tab's Register waits this long for it: the reference script asks
 * at once or after 500 ms, and a first visit's handshake on a slow network takes seconds (docs/events.md).
 */
const TAB_REGISTRATION_WAIT_MS = 10_000;

/** The event channel's WebSocket endpoint (docs/events.md); the only path whose upgrades are accepted. */
export const WEBSOCKET_PATH = '/ClientEventsWS';
/**
 * At shutdown, a WebSocket not closed this long after its close was sent is cut (docs/deployment.md
 * "Stopping a node"). A close handshake takes a round trip; this only bounds a peer that never finishes it.
 */
export const WEBSOCKET_CLOSE_DEADLINE_MS = 2_000;

declare module 'fastify' {
  interface FastifyInstance {
    /** The WebSocket server behind `/ClientEventsWS` (its `clients` are the live sockets). */
    websocketServer: WebSocketUpgrade['server'];
  }
}

/** What other areas do when a tab's events cannot reach it, or a tab is let go: made before the events area (wiring/agent.ts createAgentTabHooks). */
export interface TabHooks {
  /** An XMPP event its tab could not take: stored for PopMessages. */
  storeUndelivered(fallback: DeliveryFallback): Promise<void>;
  /** The tab's XMPP handlers go with it. */
  forgetHandlers(address: TabAddress): void;
  /** The tabs this node holds are alive (their handlers must not expire). */
  touchHandlers(addresses: readonly TabAddress[]): void;
}

export interface EventsArea extends Area {
  hub: Hub;
  registry: TabRegistry;
  /** First step of shutdown: closes every tab connection now. Idempotent. */
  closeConnections(): void;
}

export interface EventsAreaDeps {
  shared: SharedState;
  clock: Clock;
  metrics: Metrics;
  log: Logger;
  /** What the agent does when a tab's events cannot reach it, or a tab is let go (wiring/agent.ts createAgentTabHooks). */
  hooks: TabHooks;
}

/**
 * The client event channel's domain: this node's live tabs (hub) and tab registration (docs/events.md);
 * its WebSocket endpoint, the long-poll route and `/Events.js`. `instanceId` is this run's id, told to
 * every page in its greeting.
 */
export function createEventsArea(config: Config, instanceId: string, { shared, clock, metrics, log, hooks }: EventsAreaDeps): EventsArea {
  const { store, broker } = shared;
  // Store writes the hub's hooks start and nobody awaits: the store must stay open until they are done.
  const writes = new Set<Promise<void>>();
  const track = (write: Promise<void>): void => {
    const tracked = write.finally(() => writes.delete(tracked));
    writes.add(tracked);
  };
  const hub: Hub = new Hub(
    {
      broker,
      clock,
      log: log.child({ module: 'hub' }),
      // Pages remember the first id and reload when a later one differs (docs/events.md "Restarts").
      greeting: () => ({ type: EventTypes.CheckServerInstance, data: instanceId }),
      counters: metrics.hubCounters,
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
    },
    {
      node: shared.nodeId,
      tabIdleMs: config.tabIdleSeconds * 1000,
      longPollGapMs: LONG_POLL_GAP_MS,
      presenceTtlMs: shared.presenceTtlMs,
      rollEveryMs: ROLL_EVERY_MS,
      outboxMaxAgeMs: config.outboxMaxAgeSeconds * 1000,
      messageConfirmMs: config.messageConfirmSeconds * 1000,
      maxTabsPerSession: config.tabsPerSession,
    },
  );
  metrics.watchHub(() => hub.snapshot());
  const registry = new TabRegistry(
    {
      tabs: store.tabs,
      codes: store.codes,
      writtenResults: store.writtenResults,
      hub,
      clock,
      // Redis errors of the broker are an outage of the shared state (docs/redis.md "During a Redis outage").
      ...(shared.redis ? { sharedUnavailable: redisUnavailable } : {}),
    },
    { resultReplayMs: config.outboxMaxAgeSeconds * 1000, registrationWaitMs: TAB_REGISTRATION_WAIT_MS, tabIdleMs: config.tabIdleSeconds * 1000 },
  );
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
  /**
   * A node whose streams are in memory loses them as it stops, and after its restart each tab that comes back
   * is sent its session's recent results again: those its pages were written are kept in the store and left
   * out then, so a page gets each result once across a clean restart (docs/events.md "Restarts").
   */
  const rememberWrittenResults = async (): Promise<void> => {
    if (!(broker instanceof MemoryBroker)) return;
    const windowMs = config.outboxMaxAgeSeconds * 1000;
    const written = broker.writtenKeys(clock.now() - windowMs, isResultPublishKey).map(({ key, at }) => ({ key, expiresAt: at + windowMs + WRITTEN_RESULT_MARGIN_MS }));
    if (written.length === 0) return;
    await store.writtenResults.remember(written).catch((err: unknown) => log.error({ err, results: written.length }, 'keeping the results written to pages failed: they may be sent again after the restart'));
  };
  const heartbeat = () => hub.refresh().catch((err: unknown) => log.warn({ err }, 'presence heartbeat failed'));
  return {
    hub,
    registry,
    closeConnections: () => hub.close(),
    async registerRoutes({ app, cookies }) {
      // A Register waits through an outage as long as a poll is held, so both transports ride out the same one.
      const channel = { registry, hub, log: log.child({ module: 'channel:websocket' }), outageWaitMs: config.longPollHoldSeconds * 1000 };
      const upgrade = new WebSocketUpgrade(app.server, {
        path: WEBSOCKET_PATH,
        maxPayload: 16 * 1024,
        clock,
        pingTimeoutMs: config.pingTimeoutSeconds * 1000,
        closeDeadlineMs: WEBSOCKET_CLOSE_DEADLINE_MS,
        decide: decideUpgrade(app, { allowedOrigins: config.allowedOrigins, cookies }),
        serve: (socket, sessionHash, alive, raw) => serveWebSocket(socket, sessionHash, channel, alive, raw),
        refusal: rawProblemResponse,
      });
      app.decorate('websocketServer', upgrade.server);
      app.addHook('preClose', async () => upgrade.close());
      await app.register(eventsRoutes, {
        registry,
        hub,
        longPollHoldMs: config.longPollHoldSeconds * 1000,
        allowedOrigins: config.allowedOrigins,
        cookies,
      });
      // It hands out the session cookie, so a page's first QR request carries it even when the event
      // channel's handshake is still under way (docs/events.md "QR requests and the tab").
      await app.register(eventsScriptRoutes, { cookies });
    },
    start: () => {
      timers.start();
      if (shared.clustered) void heartbeat();
    },
    // Before the store closes (areas stop in reverse order; the shared area, with the store, comes last).
    async stop() {
      await timers.stop();
      await hub.stop();
      await Promise.all(writes);
      await rememberWrittenResults();
    },
  };
}
