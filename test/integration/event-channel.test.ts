import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventFrame } from '../../src/protocol/frames.js';
import { counter, deliverToTab, post, registered } from '../helpers/http.js';
import { startService, type TestService } from '../helpers/service.js';
import { connected, disconnected, hubTab } from '../helpers/hub.js';
import { INSTANCE_EVENT, TestTab } from '../helpers/tab.js';
import { until } from '../helpers/until.js';

let service: TestService;

beforeAll(async () => {
  service = await startService({ longPollHoldSeconds: 1, pingTimeoutSeconds: 5 });
});
afterAll(async () => service.close());

interface PollResult {
  status: number;
  /** The answer's events but the instance greeting (docs/events.md "Restarts"). */
  body: any;
  /** `CheckServerInstance` frames in the answer (the first poll of a tab new here gets one). */
  instances: EventFrame[];
  cookie: string | undefined;
}

/** One long-poll exactly as the reference client sends it. */
async function poll(tabId: string | undefined, o: { cookie?: string; lastEventId?: number; origin?: string; signal?: AbortSignal } = {}): Promise<PollResult> {
  const headers: Record<string, string> = { 'content-type': 'text/plain' };
  if (tabId !== undefined) headers['x-tabid'] = tabId;
  if (o.cookie) headers.cookie = o.cookie;
  if (o.lastEventId !== undefined) headers['x-last-event-id'] = String(o.lastEventId);
  if (o.origin) headers.origin = o.origin;
  const response = await fetch(`${service.baseUrl}/ClientEvents`, { method: 'POST', headers, body: 'http://127.0.0.1/page', ...(o.signal ? { signal: o.signal } : {}) });
  const json = await response.json();
  const frames = Array.isArray(json) ? (json as EventFrame[]) : [];
  return {
    status: response.status,
    body: Array.isArray(json) ? frames.filter((e) => e.type !== INSTANCE_EVENT) : json,
    instances: frames.filter((e) => e.type === INSTANCE_EVENT),
    cookie: response.headers.get('set-cookie')?.split(';')[0],
  };
}

const deliver = (tabId: string, n: number) => deliverToTab(service, tabId, { type: 'Counter', data: n });

describe('long-poll /ClientEvents', () => {
  it('registers the tab on the first poll, answers it at once with the session cookie, and answers NOP when idle', async () => {
    const tabId = randomUUID();
    const first = await poll(tabId);
    expect(first.status).toBe(200);
    expect(first.body).toEqual([]); // not held: a poll held to the end of the hold time answers [{"type":"NOP"}]
    expect(first.instances.map((e) => typeof e.data)).toEqual(['string']); // the tab is new here: the instance greeting
    expect(first.cookie).toMatch(/^tabwire_sid=/);
    expect(await service.store.tabs.sessionOf(tabId)).toBeDefined();
    const idle = await poll(tabId, { cookie: first.cookie! });
    expect(idle.body).toEqual([{ type: 'NOP' }]);
    expect(idle.cookie).toBeUndefined();
  });

  it('answers a held poll as soon as an event arrives', async () => {
    const tabId = randomUUID();
    const { cookie } = await poll(tabId);
    const held = poll(tabId, { cookie });
    await until(() => connected(service, tabId), 'the poll to be held');
    await deliver(tabId, 7);
    const answer = await held;
    expect(answer.status).toBe(200);
    expect(answer.body).toHaveLength(1);
    expect(answer.body[0]).toMatchObject({ type: 'Counter', data: 7 });
    expect(typeof answer.body[0].id).toBe('number');
  });

  it('refuses a poll without X-TabID, for a tab it does not know any more, and for another session\'s tab', async () => {
    const missing = await poll(undefined);
    expect([missing.status, missing.body.code]).toEqual([400, 'tab_id_missing']);
    const unknown = await poll(randomUUID(), { lastEventId: 5 });
    expect([unknown.status, unknown.body.code]).toEqual([404, 'tab_not_registered']);
    const owner = await TestTab.open(service.wsUrl);
    await registered(service, owner.tabId);
    const foreign = await poll(owner.tabId);
    expect([foreign.status, foreign.body.code]).toEqual([403, 'tab_session_mismatch']);
    expect(owner.closeCode).toBeUndefined();
    owner.close();
  });

  it('refuses a foreign Origin on both transports', async () => {
    const refused = await poll(randomUUID(), { origin: 'https://evil.example' });
    expect([refused.status, refused.body.code]).toEqual([403, 'origin_not_allowed']);
    await expect(TestTab.open(service.wsUrl, { origin: 'https://evil.example' })).rejects.toThrow(/403/);
    const allowed = await poll(randomUUID(), { origin: service.baseUrl });
    expect(allowed.status).toBe(200);
  });

  it('two polls of one tab in one session (a duplicated browser tab) are both held and both get the event, never a 409', async () => {
    const tabId = randomUUID();
    const { cookie } = await poll(tabId);
    const first = poll(tabId, { cookie });
    const second = poll(tabId, { cookie });
    const address = { tabId, session: (await service.store.tabs.sessionOf(tabId))! };
    // Both polls held: the second did not answer the first.
    await until(() => service.app.tabwire.hub.state(address)?.connections === 2, 'both polls to be held');
    await deliver(tabId, 42);
    const answers = await Promise.all([first, second]);
    expect(answers.map((a) => [a.status, a.body.map((e: EventFrame) => e.data)])).toEqual([
      [200, [42]],
      [200, [42]],
    ]);
  });
});

describe('the per-tab outbox across transports', () => {
  it('keeps order and delivers each id exactly once across WebSocket -> long-poll -> WebSocket', async () => {
    const seen: EventFrame[] = [];
    let ws = await TestTab.open(service.wsUrl);
    const { tabId, cookie } = ws;
    await registered(service, tabId);
    for (let n = 1; n <= 3; n++) await deliver(tabId, n);
    await until(() => ws.events.length === 3, 'the three counters');
    seen.push(...ws.events);
    ws.close();
    await until(() => disconnected(service, tabId), 'the service to see the socket close');

    for (let n = 4; n <= 6; n++) await deliver(tabId, n); // between connections: buffered
    let answer = await poll(tabId, { cookie, lastEventId: seen.at(-1)!.id });
    seen.push(...answer.body);
    const held = poll(tabId, { cookie, lastEventId: seen.at(-1)!.id });
    await until(() => connected(service, tabId), 'the poll to be held');
    await deliver(tabId, 7);
    answer = await held;
    seen.push(...answer.body);

    await deliver(tabId, 8); // no poll outstanding: buffered
    ws = await TestTab.open(service.wsUrl, { cookie, tabId, register: false });
    ws.send({ cmd: 'Register', tabId, location: 'x', lastEventId: seen.at(-1)!.id });
    await ws.next('Counter');
    await deliver(tabId, 9);
    await until(() => ws.events.some((e) => e.data === 9), 'the ninth counter');
    seen.push(...ws.events);
    ws.close();

    expect(seen.map((e) => e.data)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    const ids = seen.map((e) => e.id);
    expect(new Set(ids).size).toBe(9);
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
  });

  it('resends what a dead connection may have lost when the client says its last id', async () => {
    const ws = await TestTab.open(service.wsUrl);
    await registered(service, ws.tabId);
    await deliver(ws.tabId, 1);
    await deliver(ws.tabId, 2);
    const first = await ws.next('Counter');
    await until(() => ws.events.length === 2, 'both counters');
    ws.close();
    await until(() => disconnected(service, ws.tabId), 'the service to see the socket close');
    // The client claims it saw only the first one: the second is sent again, the first is not.
    const answer = await poll(ws.tabId, { cookie: ws.cookie, lastEventId: first.id });
    expect(answer.body.map((e: EventFrame) => e.data)).toEqual([2]);
  });

  it('bounds the outbox: the 101st event drops the oldest, and it is counted', async () => {
    const ws = await TestTab.open(service.wsUrl);
    await registered(service, ws.tabId);
    ws.close();
    await until(() => disconnected(service, ws.tabId), 'the service to see the socket close');
    const dropped = () => counter(service, 'tabwire_events_dropped_total', { reason: 'overflow' });
    const before = await dropped();
    for (let n = 1; n <= 101; n++) await deliver(ws.tabId, n);
    await until(async () => (await dropped()) > before, 'the overflow to be counted');
    expect(await dropped()).toBe(before + 1);
    const answer = await poll(ws.tabId, { cookie: ws.cookie });
    expect(answer.body).toHaveLength(100);
    expect(answer.body[0].data).toBe(2);
    expect(answer.body.at(-1).data).toBe(101);
  });

  it('forgets a tab with no connection after 60 s (moved clock); a QR request of the same session binds it again', async () => {
    const ws = await TestTab.open(service.wsUrl);
    await registered(service, ws.tabId);
    ws.close();
    await until(() => disconnected(service, ws.tabId), 'the service to see the socket close');
    service.clock.advance(59_000);
    service.app.tabwire.hub.sweep();
    const address = { tabId: ws.tabId, session: (await service.store.tabs.sessionOf(ws.tabId))! };
    expect(await service.app.tabwire.hub.holds(address)).toBe(true);
    service.clock.advance(1_000);
    service.app.tabwire.hub.sweep();
    await until(async () => !(await service.app.tabwire.hub.holds(address)), 'the tab to be let go');
    await until(async () => (await service.store.tabs.sessionOf(ws.tabId)) === undefined, 'the registration to be removed');
    const qr = await post(service, '/QuickLogin', { mode: 'text', purpose: 'x', serviceId: '', tab: ws.tabId }, { cookie: ws.cookie });
    expect(qr.status).toBe(200);
    expect(await service.store.tabs.sessionOf(ws.tabId)).toBe(address.session);
  });

  it('closes a WebSocket that misses three pings (4408), and keeps one that pings', async () => {
    const silent = await TestTab.open(service.wsUrl);
    const pinging = await TestTab.open(service.wsUrl);
    await registered(service, silent.tabId);
    service.clock.advance(4_000);
    pinging.send({ cmd: 'Ping' });
    await until(async () => (await hubTab(service, pinging.tabId))?.lastSeen === service.clock.now(), 'the ping to be processed');
    service.clock.advance(1_500);
    // The watchdog runs every 5 s of real time; the deadline only bounds a broken run.
    expect(await silent.closed(15_000)).toEqual({ code: 4408, reason: 'ping_timeout' });
    expect(pinging.closeCode).toBeUndefined();
    pinging.close();
  });
});
