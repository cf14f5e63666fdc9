import type { BackoffOptions } from './backoff.js';
import type { EventClientDeps } from './client.js';
import type { EventsApi } from './events-api.js';
import { defaultHost, HOST_META_NAMES, parseHost, type EventHost } from './host.js';
import type { FetchLike, Logger, SocketFactory, Timers } from './platform.js';
import { newGuid, windowNameStore, type TabIdStore } from './tab-id.js';

/** Options of `createEventClient`; every one defaults to the page's own. */
export interface EventClientOptions {
  /** Event server `host[:port]`; default: `<meta name="tabwire-events">`, `<meta name="NEURON">`, then the page's host. */
  host?: string;
  /** TLS for the event server; default: the page is https. */
  secure?: boolean;
  /** Where the tab ID is kept; default `window.name`. */
  tabIdStore?: TabIdStore;
  newTabId?: () => string;
  /** The page URL sent to the service; default `location.href`. */
  location?: () => string;
  /** A WebSocket constructor; `null` forces long-polling. */
  WebSocket?: SocketFactory | null;
  /** A fetch function; `null` disables the long-poll fallback. */
  fetch?: FetchLike | null;
  /** Called as methods of this object. */
  timers?: Timers;
  /** For backoff jitter; default Math.random. */
  random?: () => number;
  backoff?: Omit<BackoffOptions, 'random'>;
  log?: Logger;
  /** Unregister on `pagehide` and reconnect on a back/forward-cache `pageshow`; default true in a window. */
  pageLifecycle?: boolean;
}

const browserWindow = (): Window | undefined => (typeof window === 'undefined' ? undefined : window);

/** The content of the first `<meta name=…>` with this name (compared case-insensitively, as HTML names are). */
export function metaContent(doc: Document | undefined, name: string): string | undefined {
  if (!doc) return undefined;
  const wanted = name.toLowerCase();
  for (const meta of Array.from(doc.getElementsByTagName('meta'))) {
    if (meta.name.toLowerCase() === wanted) return meta.content;
  }
  return undefined;
}

/** The page's default event server, read when called so meta tags after the script count. */
function pageHost(win: Window | undefined): EventHost {
  const page = win?.location ?? { host: '', protocol: 'https:' };
  return defaultHost(page, HOST_META_NAMES.map((name) => metaContent(win?.document, name)));
}

function explicitHost(options: EventClientOptions, win: Window | undefined): (() => EventHost) | undefined {
  if (options.host === undefined && options.secure === undefined) return undefined;
  const host = options.host === undefined ? undefined : parseHost(options.host);
  if (options.host !== undefined && host === undefined) throw new TypeError(`createEventClient: host "${options.host}" is not host[:port]`);
  return () => {
    const page = pageHost(win);
    return { host: host ?? page.host, secure: options.secure ?? page.secure };
  };
}

// Wrapped so the DOM functions are never called with a foreign `this` ("Illegal invocation").
const domTimers: Timers = {
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  clearTimeout: (handle) => clearTimeout(handle as number),
};

/** Fills every dependency the options leave open from the browser. */
export function browserDeps(options: EventClientOptions): EventClientDeps {
  const win = browserWindow();
  const tabIdStore = options.tabIdStore ?? (win ? windowNameStore(win) : undefined);
  if (!tabIdStore) throw new TypeError('createEventClient: outside a window, pass a tabIdStore');
  if (!win && options.host === undefined) throw new TypeError('createEventClient: outside a window, pass a host');
  const WebSocketCtor = options.WebSocket === undefined ? (typeof WebSocket === 'function' ? WebSocket : undefined) : options.WebSocket;
  const fetchFn = options.fetch === undefined ? (typeof fetch === 'function' ? fetch : undefined) : options.fetch;
  const backoff: BackoffOptions = { ...options.backoff, ...(options.random ? { random: options.random } : {}) };
  return {
    tabIdStore,
    newTabId: options.newTabId ?? (() => newGuid(crypto)),
    defaultHost: explicitHost(options, win) ?? (() => pageHost(win)),
    location: options.location ?? (() => win?.location.href ?? ''),
    WebSocket: WebSocketCtor ?? undefined,
    fetch: fetchFn ? (url, init) => fetchFn(url, init) : undefined,
    timers: options.timers ?? domTimers,
    log: options.log ?? console,
    backoff,
  };
}

/**
 * docs/events.md, on `pagehide` rather than `beforeunload`: it also fires when
 * the page enters the back/forward cache (and `beforeunload` handlers keep pages out of it).
 * A page restored from that cache connects again. Returns a function that unbinds.
 */
export function bindPageLifecycle(win: Window, events: EventsApi): () => void {
  let wasConnected = false;
  const onHide = (): void => {
    wasConnected = events.stats.transport !== 'none';
    events.disconnect();
  };
  const onShow = (event: PageTransitionEvent): void => {
    if (event.persisted && wasConnected) events.connect();
  };
  win.addEventListener('pagehide', onHide);
  win.addEventListener('pageshow', onShow);
  return () => {
    win.removeEventListener('pagehide', onHide);
    win.removeEventListener('pageshow', onShow);
  };
}
