import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { EventClientDeps } from '../../src/browser/client.js';
import type { FetchLike, PollRequest, SocketLike } from '../../src/browser/platform.js';
import { pageClient } from '../helpers/event-client.js';

/** A WebSocket the test drives from the server side. */
class FakeSocket implements SocketLike {
  readyState = 0;
  onopen: SocketLike['onopen'] = null;
  onmessage: SocketLike['onmessage'] = null;
  onclose: SocketLike['onclose'] = null;
  onerror: SocketLike['onerror'] = null;
  readonly sent: unknown[] = [];
  closedWith: { code?: number | undefined; reason?: string | undefined } | undefined;

  constructor(
    readonly url: string,
    readonly protocols: string,
  ) {}

  send(data: string): void {
    this.sent.push(JSON.parse(data));
  }
  close(code?: number, reason?: string): void {
    this.closedWith = { code, reason };
    this.readyState = 3;
  }
  // The server's side:
  open(): void {
    this.readyState = 1;
    this.onopen?.({});
  }
  push(frame: unknown): void {
    this.onmessage?.({ data: typeof frame === 'string' ? frame : JSON.stringify(frame) });
  }
  serverClose(code: number, reason = ''): void {
    this.readyState = 3;
    this.onclose?.({ code, reason });
  }
  /** A handshake that fails (refused, blocked by a proxy): error, then close 1006. */
  failOpen(): void {
    this.readyState = 3;
    this.onerror?.({});
    this.onclose?.({ code: 1006, reason: '' });
  }
}

function makeClient(over: Partial<EventClientDeps> = {}) {
  const sockets: FakeSocket[] = [];
  class WebSocket extends FakeSocket {
    constructor(url: string, protocols: string) {
      super(url, protocols);
      sockets.push(this);
    }
  }
  const polls: { url: string; init: PollRequest }[] = [];
  const fetch: FetchLike = (url, init) => {
    polls.push({ url, init });
    return new Promise(() => {}); // held, like an idle long poll
  };
  const last = () => sockets[sockets.length - 1]!;
  return { ...pageClient({ defaultHost: () => ({ host: 'events.example:8443', secure: true }), WebSocket, fetch, ...over }), sockets, last, polls };
}

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('event client on WebSocket', () => {
  it('opens wss://host/ClientEventsWS with subprotocol ls, sends Register, then Ping every 10 s', async () => {
    const { client, sockets, last } = makeClient();
    client.connect();
    expect(sockets).toHaveLength(1);
    expect(last().url).toBe('wss://events.example:8443/ClientEventsWS');
    expect(last().protocols).toBe('ls');
    last().open();
    await client.ready;
    expect(last().sent).toEqual([{ cmd: 'Register', tabId: client.tabId, location: 'https://shop.example/login' }]);
    expect(client.stats.transport).toBe('websocket');
    await vi.advanceTimersByTimeAsync(10_000);
    expect(last().sent).toHaveLength(2);
    expect(last().sent[1]).toEqual({ cmd: 'Ping' });
    await vi.advanceTimersByTimeAsync(20_000);
    expect(last().sent).toEqual([expect.anything(), { cmd: 'Ping' }, { cmd: 'Ping' }, { cmd: 'Ping' }]);
  });

  it('reconnects with backoff after a close and sends the last event id in Register', async () => {
    const { client, sockets, last } = makeClient();
    const got = vi.fn();
    client.on('SignatureReceived', got);
    client.connect();
    last().open();
    last().push({ type: 'SignatureReceived', data: { Id: 'a' }, id: 3 });
    expect(got).toHaveBeenCalledOnce();
    last().serverClose(1001, 'shutdown');
    expect(sockets).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(499);
    expect(sockets).toHaveLength(2);
    last().open();
    expect(last().sent[0]).toEqual({ cmd: 'Register', tabId: client.tabId, location: 'https://shop.example/login', lastEventId: 3 });
    expect(client.stats.reconnects).toBe(1);
  });

  it('widens the backoff while connections fail, and resets it once a connection stayed open 10 s', async () => {
    const { client, sockets, last } = makeClient();
    client.connect();
    last().open(); // it opened once, so failures never fall back to long-poll
    const waits: number[] = [];
    for (let i = 0; i < 9; i++) {
      last().failOpen();
      const before = sockets.length;
      const t0 = Date.now();
      await vi.advanceTimersToNextTimerAsync();
      expect(sockets).toHaveLength(before + 1);
      waits.push(Date.now() - t0);
    }
    expect(waits).toEqual([499, 999, 1999, 3999, 7999, 15999, 29999, 29999, 29999]);
    last().open();
    await vi.advanceTimersByTimeAsync(10_000);
    last().serverClose(1006);
    await vi.advanceTimersByTimeAsync(499);
    expect(sockets).toHaveLength(11);
  });

  it('regression: events from a server that numbers the tab anew (lower ids) are not dropped as duplicates', async () => {
    const { client, last } = makeClient();
    const ids: (number | undefined)[] = [];
    client.on('E', (_data, event) => ids.push(event.id));
    client.connect();
    last().open();
    last().push({ type: 'E', id: 57 });
    last().serverClose(1001, 'shutdown');
    await vi.advanceTimersByTimeAsync(500);
    last().open();
    expect(last().sent[0]).toMatchObject({ lastEventId: 57 });
    // The service that now holds the tab knows nothing of it and numbers its events lower (clock behind, or from 1).
    last().push({ type: 'E', id: 1 });
    last().push({ type: 'E', id: 2 });
    expect(ids).toEqual([57, 1, 2]);
    expect(client.stats.duplicates).toBe(0);
  });

  it('4403: makes a new tab ID, stores it in window.name, and registers that at once', async () => {
    const { client, sockets, last, windowName } = makeClient();
    client.connect();
    const first = client.tabId;
    last().open();
    last().push({ type: 'E', id: 4 });
    last().serverClose(4403, 'tab_session_mismatch');
    await vi.advanceTimersByTimeAsync(0);
    expect(sockets).toHaveLength(2);
    expect(client.tabId).not.toBe(first);
    expect(windowName()).toBe(client.tabId);
    last().open();
    expect(last().sent[0]).toEqual({ cmd: 'Register', tabId: client.tabId, location: 'https://shop.example/login' });
  });

  it('1013 try again later (store or Redis unreachable): reconnects with the same tab and last id, not before 1 s', async () => {
    const { client, sockets, last, windowName } = makeClient();
    client.connect();
    last().open();
    const tabId = client.tabId;
    last().push({ type: 'E', data: 1, id: 4 });
    last().serverClose(1013, 'store_unavailable');
    // The backoff's first window is 500 ms; the service's outages say 1 s.
    await vi.advanceTimersByTimeAsync(999);
    expect(sockets).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(sockets).toHaveLength(2);
    last().open();
    expect(last().sent[0]).toEqual({ cmd: 'Register', tabId, location: 'https://shop.example/login', lastEventId: 4 });
    expect(windowName()).toBe(tabId);
    expect(client.stats.transport).toBe('websocket');
  });

  it('4409: another connection of this tab took over, so it does not reconnect', async () => {
    const { client, sockets, last, log } = makeClient();
    client.connect();
    last().open();
    last().serverClose(4409, 'replaced');
    await vi.advanceTimersByTimeAsync(120_000);
    expect(sockets).toHaveLength(1);
    expect(client.stats.transport).toBe('none');
    expect(log.warn).toHaveBeenCalledOnce();
  });

  it('disconnect (pagehide) sends Unregister, closes with 1000 and stops pinging and reconnecting', async () => {
    const { client, sockets, last } = makeClient();
    client.connect();
    last().open();
    last().push({ type: 'E', id: 2 });
    client.disconnect();
    expect(last().sent.at(-1)).toEqual({ cmd: 'Unregister' });
    expect(last().closedWith).toEqual({ code: 1000, reason: undefined });
    // The service forgot the tab, so it will number from 1 when the page comes back.
    expect(client.dispatcher.lastEventId).toBeUndefined();
    const sent = last().sent.length;
    await vi.advanceTimersByTimeAsync(120_000);
    expect(last().sent).toHaveLength(sent);
    expect(sockets).toHaveLength(1);
    client.connect(); // back from the back/forward cache
    expect(sockets).toHaveLength(2);
  });

  it('falls back to long-poll when WebSocket fails to open twice in a row and never opened', async () => {
    const { client, sockets, last, polls, log } = makeClient();
    client.connect();
    last().failOpen();
    await vi.advanceTimersByTimeAsync(500);
    expect(sockets).toHaveLength(2);
    expect(polls).toHaveLength(0);
    last().failOpen();
    await vi.advanceTimersByTimeAsync(0);
    expect(polls).toHaveLength(1);
    expect(polls[0]!.url).toBe('https://events.example:8443/ClientEvents');
    expect(polls[0]!.init.headers['X-TabID']).toBe(client.tabId);
    expect(client.stats.transport).toBe('longpoll');
    expect(log.warn).toHaveBeenCalledOnce();
  });

  it('does not fall back once a WebSocket has opened', async () => {
    const { client, sockets, last, polls } = makeClient();
    client.connect();
    last().open();
    for (let i = 0; i < 4; i++) {
      last().failOpen();
      await vi.advanceTimersByTimeAsync(30_000);
    }
    expect(sockets).toHaveLength(5);
    expect(polls).toHaveLength(0);
  });

  it('a WebSocket constructor that throws counts as a failed open', async () => {
    const { client, polls } = makeClient({
      WebSocket: class {
        constructor() {
          throw new SyntaxError('blocked');
        }
      } as unknown as EventClientDeps['WebSocket'],
    });
    client.connect();
    await vi.advanceTimersByTimeAsync(1_000);
    expect(polls).toHaveLength(1);
  });

  it('setHost moves the tab: Unregister on the old server, Register on the new one, ids forgotten', async () => {
    const { client, sockets, last } = makeClient();
    client.connect();
    last().open();
    last().push({ type: 'E', id: 9 });
    const old = last();
    client.setHost('other.example:444', false);
    expect(old.sent.at(-1)).toEqual({ cmd: 'Unregister' });
    expect(old.closedWith?.code).toBe(1000);
    expect(sockets).toHaveLength(2);
    expect(last().url).toBe('ws://other.example:444/ClientEventsWS');
    last().open();
    expect(last().sent[0]).not.toHaveProperty('lastEventId');
    // Stale events from the old socket are ignored.
    old.push({ type: 'E', id: 10 });
    expect(client.stats.received).toBe(1);
    // The same host again changes nothing.
    client.setHost('other.example:444', false);
    expect(sockets).toHaveLength(2);
    expect(() => client.setHost('https://evil.example/x')).toThrow(TypeError);
  });

  it('setHost before connect only chooses the host; secure defaults to the page', () => {
    const { client, sockets, last } = makeClient();
    client.setHost('early.example');
    expect(sockets).toHaveLength(0);
    client.connect();
    expect(last().url).toBe('wss://early.example/ClientEventsWS');
  });

  it('ignores a message from a socket the client already dropped', async () => {
    const { client, last } = makeClient();
    const handler = vi.fn();
    client.on('E', handler);
    client.connect();
    const first = last();
    first.open();
    first.failOpen();
    first.push({ type: 'E', id: 1 });
    expect(handler).not.toHaveBeenCalled();
  });
});
