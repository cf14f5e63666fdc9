import { Backoff, type BackoffOptions } from './backoff.js';
import { Dispatcher, type DispatchStats, type EventHandler } from './dispatcher.js';
import { endpoints, parseHost, type EventHost } from './host.js';
import { startPoll } from './longpoll-transport.js';
import type { FetchLike, Logger, SocketFactory, Timers } from './platform.js';
import { renewTabId, resolveTabId, type TabIdStore } from './tab-id.js';
import type { Transport, TransportEnd, TransportKind, TransportLink } from './transport.js';
import { openWebSocket } from './websocket-transport.js';

/** Everything the client needs, all injected (browser-env.ts fills them from the page). */
export interface EventClientDeps {
  tabIdStore: TabIdStore;
  newTabId: () => string;
  /** The default event server, read at each connect so late meta tags count. */
  defaultHost: () => EventHost;
  /** The page URL sent in Register and as the poll body. */
  location: () => string;
  /** Absent: long-poll only. */
  WebSocket?: SocketFactory | undefined;
  /** Absent: WebSocket only. */
  fetch?: FetchLike | undefined;
  timers: Timers;
  log: Logger;
  backoff?: BackoffOptions;
  /** A WebSocket open this long counts as stable and resets the backoff. */
  stableAfterMs?: number;
  pingIntervalMs?: number;
  pollTimeoutMs?: number;
}

/** `Events.stats`. */
export interface EventStats extends DispatchStats {
  /** Connection attempts made after a loss, a refusal or a failed open. */
  reconnects: number;
  transport: TransportKind | 'none';
}

export const STABLE_AFTER_MS = 10_000;
/** A WebSocket that failed to open this many times in a row, never having opened, gives way to long-poll. */
export const FAILED_OPENS_BEFORE_FALLBACK = 2;

/**
 * The event client (docs/events.md): keeps the tab ID, picks the transport (WebSocket,
 * long-poll when WebSocket is missing or never opens), reconnects with backoff, and hands
 * frames to the dispatcher. Transports above which nothing is lost when they switch.
 */
export class EventClient {
  readonly dispatcher: Dispatcher;
  readonly ready: Promise<void>;
  private resolveReady!: () => void;
  private currentTabId: string;
  private readonly backoff: Backoff;
  private mode: TransportKind;
  private running = false;
  private transport: Transport | undefined;
  // Bumped whenever a transport is started or dropped; a link of an older generation is ignored.
  private generation = 0;
  private retryTimer: unknown;
  private stableTimer: unknown;
  private explicitHost: EventHost | undefined;
  private host: EventHost | undefined;
  private webSocketEverOpened = false;
  private failedOpens = 0;
  // Refusals (403/404/4403) retry at once the first time, then back off, so a confused server is not hammered.
  private quickRetries = 0;
  private reconnects = 0;

  constructor(private readonly deps: EventClientDeps) {
    this.dispatcher = new Dispatcher(deps.log);
    this.backoff = new Backoff(deps.backoff);
    this.currentTabId = resolveTabId(deps.tabIdStore, deps.newTabId);
    this.mode = this.initialMode();
    this.ready = new Promise((resolve) => (this.resolveReady = resolve));
  }

  /** The tab ID in use; renewed after a 4403 / 403 tab_session_mismatch. */
  get tabId(): string {
    return this.currentTabId;
  }

  /** The event server's base URL (`https://host[:port]`); QuickLogin requests go there too. */
  get serviceUrl(): string {
    const h = this.explicitHost ?? this.host ?? this.deps.defaultHost();
    return `${h.secure ? 'https' : 'http'}://${h.host}`;
  }

  /** A snapshot of the counters; `transport` is 'none' while stopped. */
  get stats(): EventStats {
    const transport = this.running ? (this.transport?.kind ?? this.mode) : 'none';
    return { ...this.dispatcher.stats, reconnects: this.reconnects, transport };
  }

  /** Starts the channel; does nothing when it runs already. */
  connect(): void {
    if (this.running) return;
    this.running = true;
    this.host = this.explicitHost ?? this.deps.defaultHost();
    this.open();
  }

  /** Stops the channel, telling the service the tab is leaving when the transport can (Unregister). */
  disconnect(): void {
    if (!this.running) return;
    this.running = false;
    this.drop(true);
  }

  /**
   * `AgentAPI.IO.SetHost(host, secure)`: the event server lives elsewhere. Before connect it
   * only sets the host; afterwards the tab leaves the old server and registers with the new one.
   */
  setHost(host: string, secure?: boolean): void {
    const parsed = parseHost(host);
    if (parsed === undefined) throw new TypeError(`SetHost: "${String(host)}" is not host[:port]`);
    const next: EventHost = { host: parsed, secure: secure ?? this.deps.defaultHost().secure };
    const now = this.explicitHost ?? this.host;
    this.explicitHost = next;
    if (now && now.host === next.host && now.secure === next.secure) return;
    // Another server numbers the tab's events on its own, and may well speak WebSocket.
    this.dispatcher.resetEventIds();
    this.mode = this.initialMode();
    this.webSocketEverOpened = false;
    this.failedOpens = 0;
    this.backoff.reset();
    this.quickRetries = 0;
    if (!this.running) return;
    this.drop(true);
    this.host = next;
    this.open();
  }

  /** Subscribes a handler; see Dispatcher.on. */
  on(type: string, handler: EventHandler): () => void {
    return this.dispatcher.on(type, handler);
  }

  /** Unsubscribes a handler; see Dispatcher.off. */
  off(type: string, handler: EventHandler): void {
    this.dispatcher.off(type, handler);
  }

  private initialMode(): TransportKind {
    return this.deps.WebSocket ? 'websocket' : 'longpoll';
  }

  /** Stops the current transport and any pending retry. */
  private drop(goodbye: boolean): void {
    this.generation++;
    this.clearTimers();
    const told = this.transport?.stop(goodbye) ?? false;
    this.transport = undefined;
    // Unregister makes the service forget the tab; a new registration numbers its events afresh.
    if (told) this.dispatcher.resetEventIds();
  }

  private clearTimers(): void {
    if (this.retryTimer !== undefined) this.deps.timers.clearTimeout(this.retryTimer);
    if (this.stableTimer !== undefined) this.deps.timers.clearTimeout(this.stableTimer);
    this.retryTimer = this.stableTimer = undefined;
  }

  private open(): void {
    const { deps } = this;
    if (this.mode === 'longpoll' && !deps.fetch) {
      deps.log.error('tabwire Events: neither WebSocket nor fetch is available; no events will arrive');
      this.running = false;
      return;
    }
    const gen = ++this.generation;
    const urls = endpoints(this.host ?? deps.defaultHost());
    if (this.mode === 'websocket' && deps.WebSocket) {
      this.dispatcher.beginConnection();
      const link = this.link(gen, 'websocket', urls.websocket);
      const options = { WebSocket: deps.WebSocket, timers: deps.timers, ...(deps.pingIntervalMs ? { pingIntervalMs: deps.pingIntervalMs } : {}) };
      this.transport = openWebSocket(link, options);
    } else if (deps.fetch) {
      const link = this.link(gen, 'longpoll', urls.longPoll);
      const options = { fetch: deps.fetch, timers: deps.timers, ...(deps.pollTimeoutMs ? { timeoutMs: deps.pollTimeoutMs } : {}) };
      this.transport = startPoll(link, options);
    }
  }

  /** The transport's view of the client; every call from a stale transport is ignored. */
  private link(gen: number, kind: TransportKind, url: string): TransportLink {
    const current = (): boolean => this.running && gen === this.generation;
    return {
      url,
      tabId: () => this.currentTabId,
      lastEventId: () => this.dispatcher.lastEventId,
      location: () => this.deps.location(),
      ready: () => {
        if (!current()) return;
        this.resolveReady();
        if (kind !== 'websocket') return;
        this.webSocketEverOpened = true;
        this.failedOpens = 0;
        this.stableTimer = this.deps.timers.setTimeout(() => {
          this.stableTimer = undefined;
          if (!current()) return;
          this.backoff.reset();
          this.quickRetries = 0;
        }, this.deps.stableAfterMs ?? STABLE_AFTER_MS);
      },
      frame: (data) => {
        if (current()) this.dispatcher.receiveText(data);
      },
      batch: (text) => (current() ? this.dispatcher.receiveBatch(text) : true),
      end: (end) => {
        if (!current()) return;
        this.transport = undefined;
        this.clearTimers();
        this.onEnd(kind, end);
      },
    };
  }

  private onEnd(kind: TransportKind, end: TransportEnd): void {
    switch (end.kind) {
      case 'polled':
        this.backoff.reset();
        this.quickRetries = 0;
        return this.open();
      case 'lost':
        if (kind === 'websocket' && !this.webSocketEverOpened && !end.opened && this.deps.fetch) {
          if (++this.failedOpens >= FAILED_OPENS_BEFORE_FALLBACK) {
            // Something between page and server (a proxy, a firewall) blocks WebSocket; stay on long-poll.
            this.deps.log.warn('tabwire Events: WebSocket does not open; falling back to long-polling');
            this.mode = 'longpoll';
            this.backoff.reset();
            return this.retry(0);
          }
        }
        return this.retry(this.backoff.next());
      case 'unavailable':
        // The service is there but its store or Redis is not (docs/events.md "Outages"): the tab and its
        // last event id stay, the pause is the backoff's but never shorter than the service asked.
        return this.retry(Math.max(end.retryAfterMs, this.backoff.next()));
      case 'tab-rejected':
        // docs/events.md "Binding": the ID belongs to another session; this tab needs its own.
        this.currentTabId = renewTabId(this.deps.tabIdStore, this.deps.newTabId);
        this.dispatcher.resetEventIds();
        return this.retry(this.quickDelay());
      case 'tab-forgotten':
        this.dispatcher.resetEventIds();
        return this.retry(this.quickDelay());
      case 'replaced':
        // The same tab connected again elsewhere (docs/events.md 4409); two would only evict each other.
        this.running = false;
        this.deps.log.warn('tabwire Events: a newer connection of this tab took over; this page stops listening');
        return;
      default:
        return assertNever(end);
    }
  }

  private quickDelay(): number {
    return this.quickRetries++ === 0 ? 0 : this.backoff.next();
  }

  private retry(delayMs: number): void {
    this.reconnects++;
    this.retryTimer = this.deps.timers.setTimeout(() => {
      this.retryTimer = undefined;
      if (this.running) this.open();
    }, delayMs);
  }
}

function assertNever(value: never): never {
  throw new Error(`unexpected transport end ${JSON.stringify(value)}`);
}
