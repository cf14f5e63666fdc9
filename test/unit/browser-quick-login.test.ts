import { describe, expect, it, vi } from 'vitest';
import type { EventHandler } from '../../src/browser/dispatcher.js';
import type { Timers } from '../../src/browser/platform.js';
import {
  DEFAULT_REFRESH_MS,
  QuickLoginError,
  UNREGISTERED_RETRY_MS,
  qrImageSource,
  startQuickLogin,
  type QrFetch,
  type QuickLoginOptions,
} from '../../src/browser/quick-login.js';

// The QuickLogin helper against a fake channel, fake timers and a fake fetch (the real browser run is in
// test/browser/events-browser.test.ts).

function fakeTimers() {
  const pending = new Map<number, { ms: number; run: () => void }>();
  let next = 1;
  const timers: Timers = {
    setTimeout: (run, ms) => {
      pending.set(next, { ms, run });
      return next++;
    },
    clearTimeout: (handle) => void pending.delete(handle as number),
  };
  return {
    timers,
    /** Delays of the timers now pending. */
    delays: () => [...pending.values()].map((t) => t.ms),
    /** Runs every pending timer once. */
    fire() {
      const due = [...pending.entries()];
      pending.clear();
      for (const [, t] of due) t.run();
    },
  };
}

function fakeChannel(tabId = 'tab-0001') {
  const handlers = new Map<string, Set<EventHandler>>();
  return {
    tabId,
    ready: Promise.resolve(),
    serviceUrl: 'https://auth.example.org',
    on(type: string, handler: EventHandler) {
      const set = handlers.get(type) ?? new Set();
      handlers.set(type, set);
      set.add(handler);
      return () => void set.delete(handler);
    },
    emit(type: string, data: unknown) {
      for (const h of handlers.get(type) ?? []) h(data, { type, data, id: 1 } as never);
    },
    subscribed: (type: string) => handlers.get(type)?.size ?? 0,
  };
}

type Answer = { status: number; body: unknown; retryAfter?: string } | Error;

function fakeFetch(answers: Answer[]) {
  const requests: { url: string; body: Record<string, unknown> }[] = [];
  const fetch: QrFetch = async (url, init) => {
    requests.push({ url, body: JSON.parse(init.body) as Record<string, unknown> });
    const answer = answers.shift() ?? { status: 200, body: { signUrl: `https://auth.example.org/QuickLogin/Sign/c${requests.length}`, text: '██' } };
    if (answer instanceof Error) throw answer;
    return {
      status: answer.status,
      ok: answer.status >= 200 && answer.status < 300,
      headers: { get: (name: string) => (name === 'retry-after' ? (answer.retryAfter ?? null) : null) },
      json: async () => answer.body,
    };
  };
  return { fetch, requests };
}

/** Lets the helper's awaited promises (ready, fetch, json) run. */
const settle = () => new Promise((r) => setTimeout(r, 0));

function setup(options: Partial<QuickLoginOptions> = {}, answers: Answer[] = []) {
  const channel = fakeChannel();
  const clock = fakeTimers();
  const http = fakeFetch(answers);
  const seen = { codes: [] as string[], results: [] as unknown[], rejected: [] as unknown[], backend: 0, errors: [] as QuickLoginError[] };
  const session = startQuickLogin(channel, {
    mode: 'text',
    purpose: 'Log in',
    fetch: http.fetch,
    timers: clock.timers,
    onCode: (c) => seen.codes.push(c.signUrl),
    onResult: (r) => seen.results.push(r),
    onRejected: (r) => seen.rejected.push(r),
    onBackendDone: () => seen.backend++,
    onError: (e) => seen.errors.push(e),
    ...options,
  });
  return { channel, clock, http, seen, session };
}

describe('startQuickLogin', () => {
  it('asks for a code for the tab once the channel is ready, with the request fields the service requires', async () => {
    const { http, seen, clock } = setup({ propertyFilter: 'FIRST,LAST', scanSeconds: 3 });
    await settle();
    expect(http.requests).toEqual([
      {
        url: 'https://auth.example.org/QuickLogin',
        body: { mode: 'text', purpose: 'Log in', serviceId: '', tab: 'tab-0001', propertyFilter: 'FIRST,LAST', scanSeconds: 3 },
      },
    ]);
    expect(seen.codes).toHaveLength(1);
    expect(clock.delays()).toEqual([DEFAULT_REFRESH_MS]);
  });

  it('refreshes the code every refreshMs until a result arrives, then stops and unsubscribes', async () => {
    const { http, seen, clock, channel, session } = setup({ refreshMs: 5000 });
    await settle();
    for (let i = 0; i < 3; i++) {
      expect(clock.delays()).toEqual([5000]);
      clock.fire();
      await settle();
    }
    expect(http.requests).toHaveLength(4);
    expect(seen.codes).toHaveLength(4);
    expect(session.code?.signUrl).toBe(seen.codes[3]);
    channel.emit('SignatureReceived', { Id: 'id-1' });
    expect(seen.results).toEqual([{ Id: 'id-1' }]);
    expect(session.running).toBe(false);
    expect(clock.delays()).toEqual([]);
    expect(channel.subscribed('SignatureReceived')).toBe(0);
    channel.emit('SignatureReceived', { Id: 'id-2' });
    expect(seen.results).toHaveLength(1);
  });

  it('drops the answer of a request in flight when a result stopped it', async () => {
    const { http, seen, clock, channel } = setup();
    await settle();
    clock.fire(); // the second request is now in flight
    channel.emit('SignatureReceived', { Id: 'id-1' });
    await settle();
    expect(http.requests).toHaveLength(2);
    expect(seen.codes).toHaveLength(1);
    expect(clock.delays()).toEqual([]);
  });

  it('backend mode: SignatureReceivedBE calls onBackendDone and stops', async () => {
    const { http, seen, clock, channel } = setup({ serviceId: 'shop' });
    await settle();
    expect(http.requests[0]!.body.serviceId).toBe('shop');
    channel.emit('SignatureReceivedBE', '');
    expect(seen.backend).toBe(1);
    expect(clock.delays()).toEqual([]);
  });

  it('a rejection is reported and the codes go on, unless stopOnRejected', async () => {
    const on = setup();
    await settle();
    on.channel.emit('SignatureRejected', { Id: 'id-1', Purpose: 'Log in' });
    expect(on.seen.rejected).toEqual([{ Id: 'id-1', Purpose: 'Log in' }]);
    expect(on.session.running).toBe(true);
    expect(on.clock.delays()).toEqual([DEFAULT_REFRESH_MS]);

    const off = setup({ stopOnRejected: true });
    await settle();
    off.channel.emit('SignatureRejected', { Id: 'id-1', Purpose: 'Log in' });
    expect(off.seen.rejected).toHaveLength(1);
    expect(off.session.running).toBe(false);
    expect(off.clock.delays()).toEqual([]);
  });

  it('retries soon and silently while the tab is not registered yet', async () => {
    const { seen, clock } = setup({}, [{ status: 404, body: { code: 'tab_not_registered', detail: 'x' } }]);
    await settle();
    expect(seen.errors).toEqual([]);
    expect(clock.delays()).toEqual([UNREGISTERED_RETRY_MS]);
    clock.fire();
    await settle();
    expect(seen.codes).toHaveLength(1);
  });

  it('keeps going after a network error or a 429 (honouring Retry-After), and stops on a request the service refuses', async () => {
    const { seen, clock, session } = setup({}, [
      new Error('offline'),
      { status: 429, body: { code: 'rate_limited', detail: 'slow down' }, retryAfter: '7' },
      { status: 400, body: { code: 'validation_failed', detail: 'purpose is required' } },
    ]);
    await settle();
    expect(seen.errors.map((e) => [e.status, e.retrying])).toEqual([[undefined, true]]);
    expect(clock.delays()).toEqual([DEFAULT_REFRESH_MS]);
    clock.fire();
    await settle();
    expect(seen.errors[1]).toMatchObject({ status: 429, code: 'rate_limited', retrying: true, message: 'slow down' });
    expect(clock.delays()).toEqual([7000]);
    clock.fire();
    await settle();
    expect(seen.errors[2]).toMatchObject({ status: 400, code: 'validation_failed', retrying: false });
    expect(seen.errors[2]).toBeInstanceOf(QuickLoginError);
    expect(session.running).toBe(false);
    expect(clock.delays()).toEqual([]);
  });

  it('asks for a fresh code at once when events were lost', async () => {
    const { http, channel } = setup();
    await settle();
    channel.emit('EventsLost', { after: 3, epoch: 'e' });
    await settle();
    expect(http.requests).toHaveLength(2);
  });

  it('a callback that throws does not stop the refresh', async () => {
    const log = { warn: vi.fn(), error: vi.fn() };
    const { clock } = setup({ log, onCode: () => { throw new Error('page bug'); } });
    await settle();
    expect(log.error).toHaveBeenCalledOnce();
    expect(clock.delays()).toEqual([DEFAULT_REFRESH_MS]);
  });

  it('stop() ends everything; restart() starts again with a fresh code', async () => {
    const { http, clock, session, channel, seen } = setup();
    await settle();
    session.stop();
    expect(clock.delays()).toEqual([]);
    channel.emit('SignatureReceived', { Id: 'late' });
    expect(seen.results).toEqual([]);
    session.restart();
    await settle();
    expect(session.running).toBe(true);
    expect(http.requests).toHaveLength(2);
  });

  it('refuses a refresh interval that is not positive', () => {
    expect(() => setup({ refreshMs: 0 })).toThrow(RangeError);
  });
});

describe('qrImageSource', () => {
  it('gives src in image mode, a data: URL in base64 mode, nothing in text mode', () => {
    expect(qrImageSource({ signUrl: 's', src: 'https://a/QuickLogin/Qr/x.png' })).toBe('https://a/QuickLogin/Qr/x.png');
    expect(qrImageSource({ signUrl: 's', base64: 'iVBO', contentType: 'image/png' })).toBe('data:image/png;base64,iVBO');
    expect(qrImageSource({ signUrl: 's', text: '██' })).toBeUndefined();
  });
});
