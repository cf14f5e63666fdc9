import type { EventClient, EventStats } from './client.js';
import type { EventHandler } from './dispatcher.js';
import { startQuickLogin, type QuickLoginOptions, type QuickLoginSession } from './quick-login.js';

/**
 * `window.Events`, and what `createEventClient` returns: a frozen object of plain functions and
 * getters, so a page may pass `Events.on` around unbound and cannot replace parts of it.
 */
export interface EventsApi {
  /** Calls `handler(data, event)` for each event of `type`; returns a function that unsubscribes. */
  on(type: string, handler: EventHandler): () => void;
  /** Unsubscribes `handler` from `type`. */
  off(type: string, handler: EventHandler): void;
  /** Opens the channel (the script does so itself on load unless told not to); idempotent. */
  connect(): void;
  /** Closes the channel, sending Unregister on a WebSocket; `connect()` opens it again. */
  disconnect(): void;
  /** Moves the channel to another event server (`AgentAPI.IO.SetHost`); `secure` defaults to the page's scheme. */
  setHost(host: string, secure?: boolean): void;
  /** This tab's ID, for `tab` in QuickLogin requests and `tabId` in RegisterEventHandler. May change after a 4403 / 403. */
  readonly tabId: string;
  /** The newest event id seen, undefined before the first event. */
  readonly lastEventId: number | undefined;
  /** Resolves once connected (WebSocket open and Register sent, or the first poll sent); never rejects. */
  readonly ready: Promise<void>;
  /** A snapshot of the counters and the transport in use. */
  readonly stats: EventStats;
  /** The service's base URL (`https://host[:port]`) the channel talks to; QR requests go there by default. */
  readonly serviceUrl: string;
  /** Starts the QuickLogin loop for this tab (docs/sdk.md "The QuickLogin helper"): `startQuickLogin(this, options)`. */
  quickLogin(options: QuickLoginOptions): QuickLoginSession;
}

/** Wraps a client as the page-facing API. */
export function eventsApi(client: EventClient): EventsApi {
  const api: EventsApi = Object.freeze({
    on: (type: string, handler: EventHandler) => client.on(type, handler),
    off: (type: string, handler: EventHandler) => client.off(type, handler),
    connect: () => client.connect(),
    disconnect: () => client.disconnect(),
    setHost: (host: string, secure?: boolean) => client.setHost(host, secure),
    get tabId() {
      return client.tabId;
    },
    get lastEventId() {
      return client.dispatcher.lastEventId;
    },
    ready: client.ready,
    get stats() {
      return client.stats;
    },
    get serviceUrl() {
      return client.serviceUrl;
    },
    quickLogin: (options: QuickLoginOptions) => startQuickLogin(api, options),
  });
  return api;
}
