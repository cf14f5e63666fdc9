import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { hashSession } from '../../src/http/session.js';
import type { TabStore } from '../../src/store/stores.js';
import { startService, type TestService } from '../helpers/service.js';
import { INSTANCE_EVENT, TestTab } from '../helpers/tab.js';
import { until } from '../helpers/until.js';

// docs/events.md "Long-poll": a page polls again at once after every answer, so a poll of a tab this node
// already holds for the session must not cost a store round trip (an INSERT and a SELECT of the binding);
// the first poll, a poll after the tab was let go, and one from a page of another origin still bind. The
// same rule serves a socket reconnecting to the node that holds its tab (docs/events.md "Tab bindings").

let service: TestService;
/** The binding look-ups and writes of the real SQLite store, per tab id. */
const calls: { method: 'bind' | 'bindingOf' | 'sessionOf'; tabId: string }[] = [];
/** The store's own methods, for the test's look-ups (not counted). */
let real: Pick<TabStore, 'bindingOf' | 'sessionOf'>;

beforeAll(async () => {
  service = await startService({ longPollHoldSeconds: 1 });
  const tabs = service.store.tabs;
  real = { bindingOf: tabs.bindingOf.bind(tabs), sessionOf: tabs.sessionOf.bind(tabs) };
  for (const method of ['bind', 'bindingOf', 'sessionOf'] as const) {
    const own = (tabs[method] as (...args: unknown[]) => Promise<unknown>).bind(tabs);
    Object.assign(tabs, {
      [method]: (tabId: string, ...rest: unknown[]) => {
        calls.push({ method, tabId });
        return own(tabId, ...rest);
      },
    });
  }
});
afterAll(async () => service?.close());

const storeCalls = (tabId: string) => calls.filter((c) => c.tabId === tabId).map((c) => c.method);

/** One long-poll as the reference client sends it; `location` is the body. */
async function poll(tabId: string, o: { cookie?: string; lastEventId?: number; location?: string } = {}) {
  const headers: Record<string, string> = { 'content-type': 'text/plain', 'x-tabid': tabId };
  if (o.cookie) headers.cookie = o.cookie;
  if (o.lastEventId !== undefined) headers['x-last-event-id'] = String(o.lastEventId);
  const response = await fetch(`${service.baseUrl}/ClientEvents`, { method: 'POST', headers, body: o.location ?? 'http://127.0.0.1/page' });
  return { status: response.status, body: (await response.json()) as unknown, cookie: response.headers.get('set-cookie')?.split(';')[0] };
}

/** A tab registered by its first poll (which binds it), with the session cookie that poll set. */
async function firstPoll(tabId: string): Promise<string> {
  const first = await poll(tabId);
  expect(first.status).toBe(200);
  expect(storeCalls(tabId)).toContain('bind');
  return first.cookie!;
}

it('binds a tab at its first poll, and asks the store nothing at the repeat polls of the tab held here', async () => {
  const tabId = randomUUID();
  const cookie = await firstPoll(tabId);
  const before = storeCalls(tabId).length;
  for (let i = 0; i < 3; i++) {
    const again = await poll(tabId, { cookie });
    expect([again.status, again.body]).toEqual([200, [{ type: 'NOP' }]]);
  }
  // Resuming after an id (tabwire's /Events.js sends one once it saw an event): known here, nothing asked.
  expect((await poll(tabId, { cookie, lastEventId: 0 })).status).toBe(200);
  expect(storeCalls(tabId).slice(before)).toEqual([]);
  expect(await real.sessionOf(tabId)).toBe(hashSession(cookie.split('=')[1]!));
});

it('binds again at the poll of a page of another origin, so cookie-less QR requests follow the page', async () => {
  const tabId = randomUUID();
  const cookie = await firstPoll(tabId);
  expect((await real.bindingOf(tabId))?.origin).toBe('http://127.0.0.1');
  const before = storeCalls(tabId).length;
  expect((await poll(tabId, { cookie, location: 'https://shop.example/basket' })).status).toBe(200);
  expect(storeCalls(tabId).slice(before)).toContain('bind');
  expect((await real.bindingOf(tabId))?.origin).toBe('https://shop.example');
  // Polling on from there is a repeat poll again.
  const moved = storeCalls(tabId).length;
  expect((await poll(tabId, { cookie, location: 'https://shop.example/basket' })).status).toBe(200);
  expect(storeCalls(tabId).slice(moved)).toEqual([]);
});

it('binds again at the first poll after the tab was let go (idle past tabIdleSeconds)', async () => {
  const tabId = randomUUID();
  const cookie = await firstPoll(tabId);
  const { hub } = service.app.tabwire;
  const address = { tabId, session: hashSession(cookie.split('=')[1]!) };
  service.clock.advance(service.app.tabwire.config.tabIdleSeconds * 1000 + 10_000);
  hub.sweep();
  await until(async () => !hub.holdsHere(address) && (await real.sessionOf(tabId)) === undefined, 'the tab and its binding to be let go');
  const before = storeCalls(tabId).length;
  // Resuming a tab the service no longer knows: 404 (the store was asked), and no binding.
  const resumed = await poll(tabId, { cookie, lastEventId: 1 });
  expect([resumed.status, (resumed.body as { code?: string }).code]).toEqual([404, 'tab_not_registered']);
  expect(storeCalls(tabId).slice(before)).toContain('sessionOf');
  expect(storeCalls(tabId).slice(before)).not.toContain('bind');
  const rebinding = storeCalls(tabId).length;
  expect((await poll(tabId, { cookie })).status).toBe(200);
  expect(storeCalls(tabId).slice(rebinding)).toContain('bind');
  expect(await real.sessionOf(tabId)).toBe(address.session);
});

it('binds nothing either when a socket of the session reconnects to the node holding its tab', async () => {
  const first = await TestTab.open(service.wsUrl);
  await first.next(INSTANCE_EVENT);
  expect(storeCalls(first.tabId)).toContain('bind');
  first.close();
  const before = storeCalls(first.tabId).length;
  // The same page again (same tab id and cookie): its Register is greeted, the store untouched.
  const again = await TestTab.open(service.wsUrl, { tabId: first.tabId, cookie: first.cookie });
  await again.next(INSTANCE_EVENT);
  expect(storeCalls(first.tabId).slice(before)).toEqual([]);
  again.close();
});
