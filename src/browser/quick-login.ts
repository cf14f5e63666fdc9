import { EventTypes, type QuickLoginRejection, type QuickLoginResult } from '../protocol/events.js';
import { problemCodes } from '../protocol/problem-codes.js';
import type { EventHandler } from './dispatcher.js';
import type { Logger, Timers } from './platform.js';

/**
 * The QuickLogin loop every login page runs (docs/sdk.md "The QuickLogin helper"): ask for a code for
 * this tab, show it, ask for a fresh one every `refreshMs`, and stop once the tab hears the result.
 */

/** `mode` of a QR request (docs/signing.md). */
export type QrMode = 'image' | 'base64' | 'text';

/** One answer of `POST /QuickLogin`; which fields are present follows from the mode (docs/signing.md). */
export interface QrCode {
  /** The URL in the QR code; opening it on this device shows the approval page. */
  signUrl: string;
  /** `image`: the PNG's absolute URL on the service. */
  src?: string;
  /** `base64`: the PNG itself. */
  base64?: string;
  contentType?: string;
  /** `image` and `base64`: the PNG's size in pixels. */
  width?: number;
  height?: number;
  /** `text`: the code drawn with block characters. */
  text?: string;
}

/** The part of a fetch Response the helper reads; the DOM's Response fits. */
export interface QrResponseLike {
  readonly status: number;
  readonly ok: boolean;
  readonly headers: { get(name: string): string | null };
  json(): Promise<unknown>;
}

/** `fetch(url, init)` as the helper calls it; the DOM's fetch fits. */
export type QrFetch = (
  url: string,
  init: { method: 'POST'; credentials: 'include'; headers: Record<string, string>; body: string },
) => Promise<QrResponseLike>;

/** The part of the event client the helper uses (`window.Events`, `createEventClient()`). */
export interface QuickLoginEvents {
  on(type: string, handler: EventHandler): () => void;
  readonly tabId: string;
  readonly ready: Promise<void>;
  /** The service's base URL (`https://host[:port]`) the channel talks to. */
  readonly serviceUrl: string;
}

/** A refused QR request or an unreachable service, as given to `onError`. */
export class QuickLoginError extends Error {
  override name = 'QuickLoginError';
  constructor(
    message: string,
    /** The HTTP status; undefined when no answer came (network error, unreadable body). */
    readonly status?: number,
    /** The problem's `code` (docs/errors.md), e.g. `rate_limited`. */
    readonly code?: string,
    /** True when the helper keeps asking; false when it stopped (the request itself is wrong). */
    readonly retrying: boolean = true,
  ) {
    super(message);
  }
}

export interface QuickLoginOptions {
  mode: QrMode;
  /** Shown to the person who signs: one line of text. */
  purpose: string;
  /** '' (default): the result comes to this tab (`onResult`); a registered backend's id: backend mode (`onBackendDone`). */
  serviceId?: string;
  propertyFilter?: string;
  attachmentFilter?: string;
  agentApiTimeout?: number;
  /** Scan freshness for these codes (docs/relay.md): tightens the service's codeScanSeconds; keep it above refreshMs. */
  scanSeconds?: number;
  /** How long each code is shown before the next is asked for, in ms; default 2000, as the reference pages do. */
  refreshMs?: number;
  /** The service's base URL; default: the event channel's (`events.serviceUrl`). */
  service?: string;
  fetch?: QrFetch;
  timers?: Timers;
  log?: Logger;
  /** Also stop refreshing when the person rejects; default false (a new code follows, as on the reference pages). */
  stopOnRejected?: boolean;
  /** Each new code, to show. */
  onCode?(code: QrCode): void;
  /** Browser-only mode: the signed identity; the helper has stopped. */
  onResult?(result: QuickLoginResult): void;
  /** The person rejected the request. */
  onRejected?(rejection: QuickLoginRejection): void;
  /** Backend mode: the backend stored the result; the helper has stopped. */
  onBackendDone?(): void;
  /** A QR request failed; `error.retrying` says whether the helper goes on. */
  onError?(error: QuickLoginError): void;
}

/** What `startQuickLogin` returns. */
export interface QuickLoginSession {
  /** Stops refreshing and listening; no callback fires afterwards. */
  stop(): void;
  /** Starts again with a fresh code (after a result, a rejection or stop). */
  restart(): void;
  /** True while codes are being refreshed. */
  readonly running: boolean;
  /** The code shown now, undefined before the first. */
  readonly code: QrCode | undefined;
}

/** docs/signing.md: the reference pages ask for a new code 2 s after each answer. */
export const DEFAULT_REFRESH_MS = 2000;
/** Right after connecting, the service may not have the tab's registration yet: ask again soon. */
export const UNREGISTERED_RETRY_MS = 300;

const defaultTimers: Timers = {
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  clearTimeout: (handle) => clearTimeout(handle as Parameters<typeof clearTimeout>[0]),
};

/** The problem+json fields the helper reads (docs/errors.md). */
function problemOf(body: unknown): { code?: string; detail?: string } {
  if (typeof body !== 'object' || body === null) return {};
  const { code, detail } = body as Record<string, unknown>;
  return { ...(typeof code === 'string' ? { code } : {}), ...(typeof detail === 'string' ? { detail } : {}) };
}

/** An answer that will not change on retry: a client error other than "not yet registered" and "too many". */
const permanent = (status: number, code: string | undefined): boolean =>
  status >= 400 && status < 500 && status !== 429 && code !== problemCodes.tabNotRegistered;

/** A `src` (or data: URL) for an `<img>`, undefined in `text` mode. */
export function qrImageSource(code: QrCode): string | undefined {
  if (code.base64 !== undefined) return `data:${code.contentType ?? 'image/png'};base64,${code.base64}`;
  return code.src;
}

/**
 * Starts the loop. It waits for the channel (`events.ready`), so connect the channel (`/Events.js` does by
 * itself); codes are asked for this tab's current ID each time, so a renewed tab ID is followed.
 */
export function startQuickLogin(events: QuickLoginEvents, options: QuickLoginOptions): QuickLoginSession {
  const timers = options.timers ?? defaultTimers;
  const log = options.log ?? console;
  const refreshMs = options.refreshMs ?? DEFAULT_REFRESH_MS;
  if (!(refreshMs > 0)) throw new RangeError('startQuickLogin: refreshMs must be a positive number of milliseconds');
  const fetchFn: QrFetch | undefined = options.fetch ?? (typeof fetch === 'function' ? (url, init) => fetch(url, init) : undefined);
  if (!fetchFn) throw new TypeError('startQuickLogin: no fetch; pass options.fetch');

  let running = false;
  let current: QrCode | undefined;
  let timer: unknown;
  // Bumped on every start and stop, so an answer to an older request is dropped.
  let generation = 0;
  let unsubscribe: (() => void)[] = [];

  // A page callback that throws must not stop the loop.
  const call = <A extends unknown[]>(name: string, fn: ((...args: A) => void) | undefined, ...args: A): void => {
    if (typeof fn !== 'function') return;
    try {
      fn.apply(options, args);
    } catch (err) {
      log.error(`tabwire QuickLogin: ${name} threw`, err);
    }
  };

  const schedule = (ms: number): void => {
    if (timer !== undefined) timers.clearTimeout(timer);
    timer = timers.setTimeout(() => {
      timer = undefined;
      void request();
    }, ms);
  };

  const halt = (): void => {
    running = false;
    generation++;
    if (timer !== undefined) timers.clearTimeout(timer);
    timer = undefined;
    for (const off of unsubscribe) off();
    unsubscribe = [];
  };

  const fail = (error: QuickLoginError, retryMs: number): void => {
    if (error.retrying) schedule(retryMs);
    else halt();
    call('onError', options.onError, error);
  };

  async function request(): Promise<void> {
    if (!running) return;
    const gen = generation;
    const base = (options.service ?? events.serviceUrl).replace(/\/+$/, '');
    const body: Record<string, unknown> = { mode: options.mode, purpose: options.purpose, serviceId: options.serviceId ?? '', tab: events.tabId };
    if (options.propertyFilter !== undefined) body.propertyFilter = options.propertyFilter;
    if (options.attachmentFilter !== undefined) body.attachmentFilter = options.attachmentFilter;
    if (options.agentApiTimeout !== undefined) body.agentApiTimeout = options.agentApiTimeout;
    if (options.scanSeconds !== undefined) body.scanSeconds = options.scanSeconds;
    let status: number;
    let answer: unknown;
    let retryAfter: string | null = null;
    try {
      // credentials: the session cookie binds the code to this browser session, also for a service on another origin.
      const response = await fetchFn!(`${base}/QuickLogin`, {
        method: 'POST',
        credentials: 'include',
        headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
        body: JSON.stringify(body),
      });
      status = response.status;
      retryAfter = response.headers.get('retry-after');
      answer = await response.json().catch(() => undefined);
    } catch (err) {
      if (gen === generation) fail(new QuickLoginError(`QR request failed: ${err instanceof Error ? err.message : String(err)}`), refreshMs);
      return;
    }
    if (gen !== generation) return;
    if (status === 200 && typeof answer === 'object' && answer !== null && typeof (answer as QrCode).signUrl === 'string') {
      current = answer as QrCode;
      schedule(refreshMs);
      call('onCode', options.onCode, current);
      return;
    }
    const { code, detail } = problemOf(answer);
    if (code === problemCodes.tabNotRegistered) return schedule(UNREGISTERED_RETRY_MS);
    const retrying = !permanent(status, code);
    // RFC 9110 §10.2.3: Retry-After in seconds (the service sends seconds); never sooner than the refresh.
    const seconds = Number(retryAfter);
    const wait = Number.isFinite(seconds) && seconds > 0 ? Math.max(refreshMs, seconds * 1000) : refreshMs;
    fail(new QuickLoginError(detail ?? `QR request answered ${status}`, status, code, retrying), wait);
  }

  const listen = (type: string, handler: EventHandler): void => {
    unsubscribe.push(events.on(type, handler));
  };

  function start(): void {
    halt();
    running = true;
    const gen = generation;
    listen(EventTypes.SignatureReceived, (data) => {
      halt();
      call('onResult', options.onResult, data as QuickLoginResult);
    });
    listen(EventTypes.SignatureReceivedBE, () => {
      halt();
      call('onBackendDone', options.onBackendDone);
    });
    listen(EventTypes.SignatureRejected, (data) => {
      if (options.stopOnRejected) halt();
      call('onRejected', options.onRejected, data as QuickLoginRejection);
    });
    // docs/events.md "Event streams": events after the last id are gone; the shown code may be spent.
    listen(EventTypes.EventsLost, () => {
      if (running) void request();
    });
    void events.ready.then(() => {
      if (running && gen === generation && timer === undefined) void request();
    });
  }

  start();
  return Object.freeze({
    stop: halt,
    restart: start,
    get running() {
      return running;
    },
    get code() {
      return current;
    },
  });
}
