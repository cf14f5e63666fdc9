import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { EventClientDeps } from '../../src/browser/client.js';
import { startPoll } from '../../src/browser/longpoll-transport.js';
import type { FetchLike, PollRequest, ResponseLike } from '../../src/browser/platform.js';
import type { TransportEnd, TransportLink } from '../../src/browser/transport.js';
import { pageClient, timers } from '../helpers/event-client.js';

/** One request the fake fetch received; the test answers it when it likes. */
interface Call {
  url: string;
  init: PollRequest;
  respond(status: number, body: unknown): void;
  fail(): void;
}

function fakeFetch() {
  const calls: Call[] = [];
  const fetch: FetchLike = (url, init) =>
    new Promise<ResponseLike>((resolve, reject) => {
      calls.push({
        url,
        init,
        respond: (status, body) => resolve({ status, text: async () => (typeof body === 'string' ? body : JSON.stringify(body)) }),
        fail: () => reject(new TypeError('Failed to fetch')),
      });
    });
  return { calls, fetch };
}

const problem = (status: number, code: string) => ({ type: `urn:tabwire:problem:${code}`, title: code, status, detail: code, code });

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

const flush = () => vi.advanceTimersByTimeAsync(0);

describe('long-poll transport: one poll', () => {
  function link(lastEventId?: number) {
    const ends: TransportEnd[] = [];
    const batches: string[] = [];
    const l: TransportLink = {
      url: 'https://events.example/ClientEvents',
      tabId: () => 'tab-0001-aaaa',
      lastEventId: () => lastEventId,
      location: () => 'https://shop.example/login?x=1',
      ready: vi.fn(),
      frame: vi.fn(),
      batch: (text) => {
        batches.push(text);
        return text.startsWith('[');
      },
      end: (end) => ends.push(end),
    };
    return { link: l, ends, batches };
  }

  it('POSTs the page location as text/plain with X-TabID, credentials included, and no X-Last-Event-ID before any event', async () => {
    const { calls, fetch } = fakeFetch();
    const { link: l } = link();
    startPoll(l, { fetch, timers });
    expect(calls).toHaveLength(1);
    const { url, init } = calls[0]!;
    expect(url).toBe('https://events.example/ClientEvents');
    expect(init).toMatchObject({
      method: 'POST',
      credentials: 'include',
      headers: { 'Content-Type': 'text/plain', 'X-TabID': 'tab-0001-aaaa' },
      body: 'https://shop.example/login?x=1',
    });
    expect(init.headers).not.toHaveProperty('X-Last-Event-ID');
    expect(l.ready).toHaveBeenCalledOnce();
  });

  it('sends X-Last-Event-ID once an event was seen', () => {
    const { calls, fetch } = fakeFetch();
    startPoll(link(41).link, { fetch, timers });
    expect(calls[0]!.init.headers['X-Last-Event-ID']).toBe('41');
  });

  it.each([
    ['a 200 with frames', 200, '[{"type":"NOP"}]', { kind: 'polled' }],
    ['a 200 that is not a JSON array', 200, '<html>', { kind: 'lost', opened: true }],
    ['404 tab_not_registered', 404, problem(404, 'tab_not_registered'), { kind: 'tab-forgotten' }],
    ['403 tab_session_mismatch', 403, problem(403, 'tab_session_mismatch'), { kind: 'tab-rejected' }],
    ['404 from a server without long-poll', 404, problem(404, 'not_found'), { kind: 'lost', opened: true }],
    ['403 origin_not_allowed', 403, problem(403, 'origin_not_allowed'), { kind: 'lost', opened: true }],
    ['502 from a proxy', 502, 'Bad gateway', { kind: 'lost', opened: true }],
    ['503 store_unavailable', 503, { ...problem(503, 'store_unavailable'), retryAfter: 1 }, { kind: 'unavailable', retryAfterMs: 1000 }],
    ['503 shared_state_unavailable', 503, { ...problem(503, 'shared_state_unavailable'), retryAfter: 2 }, { kind: 'unavailable', retryAfterMs: 2000 }],
    ['503 from a proxy', 503, 'Service Unavailable', { kind: 'unavailable', retryAfterMs: 0 }],
  ])('ends %s as %o', async (_label, status, body, expected) => {
    const { calls, fetch } = fakeFetch();
    const { link: l, ends } = link();
    startPoll(l, { fetch, timers });
    calls[0]!.respond(status, body);
    await flush();
    expect(ends).toEqual([expected]);
  });

  it('ends a network failure as lost', async () => {
    const { calls, fetch } = fakeFetch();
    const { link: l, ends } = link();
    startPoll(l, { fetch, timers });
    calls[0]!.fail();
    await flush();
    expect(ends).toEqual([{ kind: 'lost', opened: false }]);
  });

  it('gives up on a poll a proxy holds far past the service hold time, aborting it', async () => {
    const { calls, fetch } = fakeFetch();
    const { link: l, ends } = link();
    startPoll(l, { fetch, timers, timeoutMs: 60_000 });
    await vi.advanceTimersByTimeAsync(59_999);
    expect(ends).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(ends).toEqual([{ kind: 'lost', opened: false }]);
    expect(calls[0]!.init.signal?.aborted).toBe(true);
  });

  it('after stop, aborts and neither reports an end nor delivers the late answer', async () => {
    const { calls, fetch } = fakeFetch();
    const { link: l, ends, batches } = link();
    const transport = startPoll(l, { fetch, timers });
    expect(transport.stop(true)).toBe(false); // no goodbye on long-poll
    calls[0]!.respond(200, [{ type: 'E', id: 1 }]);
    await flush();
    expect(calls[0]!.init.signal?.aborted).toBe(true);
    expect(ends).toEqual([]);
    expect(batches).toEqual([]);
  });
});

describe('event client on long-poll', () => {
  function makeClient(over: Partial<EventClientDeps> = {}) {
    const { calls, fetch } = fakeFetch();
    return { ...pageClient({ defaultHost: () => ({ host: 'events.example', secure: true }), fetch, ...over }), calls };
  }

  const headers = (call: Call | undefined) => call!.init.headers;

  it('uses long-poll when there is no WebSocket, dispatches, and polls again at once after a 200', async () => {
    const { client, calls } = makeClient();
    const got = vi.fn();
    client.on('SignatureReceived', got);
    client.connect();
    await client.ready;
    expect(client.stats.transport).toBe('longpoll');
    expect(calls).toHaveLength(1);
    expect(calls[0]!.url).toBe('https://events.example/ClientEvents');
    calls[0]!.respond(200, [{ type: 'SignatureReceived', data: { Id: 'r1' }, id: 5 }]);
    await flush();
    expect(got).toHaveBeenCalledWith({ Id: 'r1' }, { type: 'SignatureReceived', data: { Id: 'r1' }, id: 5 });
    expect(calls).toHaveLength(2);
    expect(headers(calls[1])['X-Last-Event-ID']).toBe('5');
    expect(client.stats).toMatchObject({ received: 1, dispatched: 1, reconnects: 0 });
  });

  it('an idle NOP answer just polls again', async () => {
    const { client, calls } = makeClient();
    client.connect();
    calls[0]!.respond(200, [{ type: 'NOP' }]);
    await flush();
    expect(calls).toHaveLength(2);
    expect(headers(calls[1])).not.toHaveProperty('X-Last-Event-ID');
  });

  it('404 tab_not_registered: forgets lastEventId and polls again at once without X-Last-Event-ID', async () => {
    const { client, calls } = makeClient();
    client.connect();
    calls[0]!.respond(200, [{ type: 'E', data: 1, id: 7 }]);
    await flush();
    expect(client.dispatcher.lastEventId).toBe(7);
    expect(headers(calls[1])['X-Last-Event-ID']).toBe('7');
    calls[1]!.respond(404, problem(404, 'tab_not_registered'));
    await flush();
    expect(client.dispatcher.lastEventId).toBeUndefined();
    expect(calls).toHaveLength(3);
    expect(headers(calls[2])).not.toHaveProperty('X-Last-Event-ID');
    expect(headers(calls[2])['X-TabID']).toBe(headers(calls[0])['X-TabID']);
    // The service numbers the tab from 1 again, and those events are delivered.
    const got = vi.fn();
    client.on('E', got);
    calls[2]!.respond(200, [{ type: 'E', data: 2, id: 1 }]);
    await flush();
    expect(got).toHaveBeenCalledOnce();
  });

  it('403 tab_session_mismatch: a new tab ID, stored in window.name, and a fresh poll', async () => {
    const { client, calls, windowName } = makeClient();
    client.connect();
    const first = client.tabId;
    expect(windowName()).toBe(first);
    calls[0]!.respond(403, problem(403, 'tab_session_mismatch'));
    await flush();
    expect(client.tabId).not.toBe(first);
    expect(windowName()).toBe(client.tabId);
    expect(headers(calls[1])['X-TabID']).toBe(client.tabId);
  });

  it('backs off after an error instead of polling again at once, and counts the reconnect', async () => {
    const { client, calls } = makeClient();
    client.connect();
    calls[0]!.respond(503, problem(503, 'unavailable'));
    await flush();
    expect(calls).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(499); // first window: up to 500 ms
    expect(calls).toHaveLength(2);
    calls[1]!.fail();
    await vi.advanceTimersByTimeAsync(998);
    expect(calls).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(1);
    expect(calls).toHaveLength(3);
    expect(client.stats.reconnects).toBe(2);
  });

  it('503 store_unavailable: the same tab and last event id poll again after the backoff, never before retryAfter', async () => {
    const { client, calls, windowName } = makeClient();
    client.connect();
    const tabId = client.tabId;
    calls[0]!.respond(200, [{ type: 'E', data: 1, id: 9 }]);
    await flush();
    // The backoff's first window (500 ms) is shorter than the service's Retry-After (1 s).
    calls[1]!.respond(503, { ...problem(503, 'store_unavailable'), retryAfter: 1 });
    await flush();
    await vi.advanceTimersByTimeAsync(999);
    expect(calls).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(1);
    expect(calls).toHaveLength(3);
    expect(headers(calls[2])).toMatchObject({ 'X-TabID': tabId, 'X-Last-Event-ID': '9' });
    expect(client.tabId).toBe(tabId);
    expect(windowName()).toBe(tabId);
    // Each further 503 widens the backoff, past the service's 1 s.
    calls[2]!.respond(503, { ...problem(503, 'store_unavailable'), retryAfter: 1 });
    await flush();
    await vi.advanceTimersByTimeAsync(999);
    expect(calls).toHaveLength(3);
    await vi.advanceTimersByTimeAsync(1);
    expect(calls).toHaveLength(4);
    calls[3]!.respond(503, { ...problem(503, 'store_unavailable'), retryAfter: 1 });
    await flush();
    await vi.advanceTimersByTimeAsync(1_998);
    expect(calls).toHaveLength(4);
    await vi.advanceTimersByTimeAsync(1);
    expect(calls).toHaveLength(5);
    expect(headers(calls[4])).toMatchObject({ 'X-TabID': tabId, 'X-Last-Event-ID': '9' });
  });

  it('repeated refusals back off after the first immediate retry', async () => {
    const { client, calls } = makeClient();
    client.connect();
    calls[0]!.respond(404, problem(404, 'tab_not_registered'));
    await flush();
    expect(calls).toHaveLength(2);
    calls[1]!.respond(404, problem(404, 'tab_not_registered'));
    await flush();
    expect(calls).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(500);
    expect(calls).toHaveLength(3);
  });

  it('disconnect stops polling; connect resumes', async () => {
    const { client, calls } = makeClient();
    client.connect();
    client.disconnect();
    expect(calls[0]!.init.signal?.aborted).toBe(true);
    expect(client.stats.transport).toBe('none');
    calls[0]!.respond(200, [{ type: 'E', id: 1 }]);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(calls).toHaveLength(1);
    client.connect();
    expect(calls).toHaveLength(2);
  });

  it('says so and stays idle with neither WebSocket nor fetch', () => {
    const { client, log } = makeClient({ fetch: undefined });
    client.connect();
    expect(log.error).toHaveBeenCalledOnce();
    expect(client.stats.transport).toBe('none');
  });
});
