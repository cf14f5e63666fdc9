import { problemCodes } from '../protocol/problem-codes.js';
import type { FetchLike, Timers } from './platform.js';
import type { Transport, TransportEnd, TransportLink } from './transport.js';

/**
 * The service holds a poll ~20 s before answering `[{"type":"NOP"}]` (docs/events.md); a
 * poll still open long after that went through a proxy that lost it, so give up and retry.
 */
export const POLL_TIMEOUT_MS = 60_000;

export interface LongPollDeps {
  fetch: FetchLike;
  timers: Timers;
  timeoutMs?: number;
}

/** A problem+json body (RFC 9457 with the catalogue's `code`), if the text is one. */
function problemOf(text: string): Record<string, unknown> | undefined {
  try {
    const body: unknown = JSON.parse(text);
    if (body !== null && typeof body === 'object' && !Array.isArray(body)) return body as Record<string, unknown>;
  } catch {
    // not JSON: an error page from a proxy
  }
  return undefined;
}

/** The `code` of a problem+json body, if it has one. */
export function problemCode(text: string): string | undefined {
  const code = problemOf(text)?.code;
  return typeof code === 'string' ? code : undefined;
}

/**
 * How long to wait at least after a 503, in ms: the problem's `retryAfter` member (seconds, the same as its
 * Retry-After header, which a cross-origin page could not read), else 0 (a proxy's 503: backoff alone).
 */
export function retryAfterMs(text: string): number {
  const seconds = problemOf(text)?.retryAfter;
  return typeof seconds === 'number' && Number.isFinite(seconds) && seconds > 0 ? Math.min(seconds, 3600) * 1000 : 0;
}

/**
 * One long poll: `POST /ClientEvents`, body = page location as text/plain, header `X-TabID`,
 * and `X-Last-Event-ID` once an event was seen (docs/events.md "What a reference page can be answered", with
 * the additive id). The answer is a JSON array of `{type, data, id}` frames. Credentials are
 * included because the tab is bound to the session cookie, also when the event host differs.
 */
export function startPoll(link: TransportLink, deps: LongPollDeps): Transport {
  const { timers } = deps;
  let done = false;
  const abort = typeof AbortController === 'function' ? new AbortController() : undefined;

  const finish = (end: TransportEnd): void => {
    if (done) return;
    done = true;
    timers.clearTimeout(timeout);
    link.end(end);
  };
  const timeout = timers.setTimeout(() => {
    abort?.abort();
    finish({ kind: 'lost', opened: false });
  }, deps.timeoutMs ?? POLL_TIMEOUT_MS);

  const headers: Record<string, string> = { 'Content-Type': 'text/plain', 'X-TabID': link.tabId() };
  const lastEventId = link.lastEventId();
  if (lastEventId !== undefined) headers['X-Last-Event-ID'] = String(lastEventId);

  const answered = (status: number, text: string): void => {
    if (done) return; // stopped while the body was read: its frames are not for this page any more
    if (status === 200) return finish(link.batch(text) ? { kind: 'polled' } : { kind: 'lost', opened: true });
    const code = problemCode(text);
    if (status === 404 && code === problemCodes.tabNotRegistered) return finish({ kind: 'tab-forgotten' });
    if (status === 403 && code === problemCodes.tabSessionMismatch) return finish({ kind: 'tab-rejected' });
    // An outage of the service's store or Redis (docs/events.md "Outages"): retry later with the same tab.
    if (status === 503) return finish({ kind: 'unavailable', retryAfterMs: retryAfterMs(text) });
    finish({ kind: 'lost', opened: true });
  };

  // Called unbound: the DOM's fetch throws "Illegal invocation" when `this` is another object.
  const fetchFn = deps.fetch;
  let request: Promise<void>;
  try {
    request = fetchFn(link.url, {
      method: 'POST',
      credentials: 'include',
      headers,
      body: link.location(),
      ...(abort ? { signal: abort.signal } : {}),
    }).then(async (response) => answered(response.status, await response.text()));
  } catch (err) {
    request = Promise.reject(err);
  }
  request.catch(() => finish({ kind: 'lost', opened: false }));
  link.ready();

  return {
    kind: 'longpoll',
    // There is no goodbye on this transport; the service forgets a tab that stops polling.
    stop() {
      if (!done) {
        done = true;
        timers.clearTimeout(timeout);
        abort?.abort();
      }
      return false;
    },
  };
}
