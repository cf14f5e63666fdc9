import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryBroker } from '../../src/broker/memory-broker.js';
import { fetchSignInfo, postDecision } from '../../src/cli/signer.js';
import { ManualClock } from '../../src/clock.js';
import { FIRST_VISIT_TICKET_MS } from '../../src/hub/first-visit.js';
import { Hub } from '../../src/hub/hub.js';
import { TabRegistry } from '../../src/hub/registry.js';
import { privateKeyFromPem } from '../../src/identity/keys.js';
import type { TabConnection } from '../../src/hub/connection.js';
import { post, registered } from '../helpers/http.js';
import { makeIdentity, startService, type TestService } from '../helpers/service.js';
import { TestTab } from '../helpers/tab.js';
import { until } from '../helpers/until.js';

// docs/events.md "A first visit without the cookie": a page with its own copy of the reference scripts asks
// for a code before its channel's handshake has set the session cookie. Without allowCookielessQrRequests.

async function approve(signUrl: string, who: Awaited<ReturnType<typeof makeIdentity>>): Promise<void> {
  const info = await fetchSignInfo(signUrl);
  expect((await postDecision(signUrl, info, who.identity.id, privateKeyFromPem(who.privateKeyPem), 'approve')).state).toBe('approved');
}

/** Another page origin the deployment allows. */
const SHOP = 'https://shop.example';

describe('a cookie-less QR request of a first visit (the compatibility switch off)', () => {
  let service: TestService;
  let ada: Awaited<ReturnType<typeof makeIdentity>>;
  let origin: string;
  /** Tab ids the service has looked up in the store (a held request looks for its tab's binding). */
  const lookedUp: string[] = [];
  beforeAll(async () => {
    service = await startService({ allowedOrigins: [SHOP] });
    ada = await makeIdentity(service, { FIRST: 'Ada' });
    origin = new URL(service.publicBaseUrl).origin;
    const tabs = service.store.tabs;
    const sessionOf = tabs.sessionOf.bind(tabs);
    tabs.sessionOf = (tabId: string) => {
      lookedUp.push(tabId);
      return sessionOf(tabId);
    };
  });
  afterAll(async () => service?.close());

  const cookieless = (tab: string, from = origin) => post(service, '/QuickLogin', { mode: 'text', purpose: 'First visit', serviceId: '', tab }, { origin: from });

  /** The page's socket: no cookie yet (the handshake sets it), Register with a location of `from`. */
  async function pageSocket(tabId: string, from = origin): Promise<TestTab> {
    const tab = await TestTab.open(service.wsUrl, { tabId, origin: from, register: false });
    expect(tab.cookie, 'the handshake set the session cookie').toMatch(/^tabwire_sid=/);
    tab.send({ cmd: 'Register', tabId, location: `${from}/login` });
    return tab;
  }

  it('waits for the Register that comes after it, is answered for that session, and the result reaches the page', async () => {
    const tabId = randomUUID();
    const asked = cookieless(tabId);
    // The request is held: it looks for the tab's binding while nobody has registered the tab.
    await until(() => lookedUp.filter((t) => t === tabId).length >= 2, 'the request to wait for its tab');
    const page = await pageSocket(tabId);
    const answer = await asked;
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(answer.headers.get('set-cookie'), 'no cookie of its own: the handshake set the page\'s').toBeNull();
    await approve(answer.body.signUrl, ada);
    expect(((await page.next('SignatureReceived')).data as { Purpose: string }).Purpose).toBe('First visit');
    // The page's next requests carry the cookie its handshake set.
    expect((await post(service, '/QuickLogin', { mode: 'text', purpose: 'Next', serviceId: '', tab: tabId }, { origin, cookie: page.cookie })).status).toBe(200);
    page.close();
  });

  it('is answered when the Register came just before it, once: a second cookie-less request is refused', async () => {
    const tabId = randomUUID();
    const page = await pageSocket(tabId);
    await registered(service, tabId);
    expect((await cookieless(tabId)).status).toBe(200);
    const again = await cookieless(tabId);
    expect([again.status, again.body.code]).toEqual([403, 'session_missing']);
    page.close();
  });

  it('is refused from another (allowed) origin than the page the tab registered from', async () => {
    const tabId = randomUUID();
    const page = await pageSocket(tabId, SHOP);
    await registered(service, tabId);
    const other = await cookieless(tabId, origin);
    expect([other.status, other.body.code]).toEqual([403, 'session_missing']);
    // ...without spending the page's own answer.
    expect((await cookieless(tabId, SHOP)).status).toBe(200);
    // Without an Origin (not a browser): refused at once.
    const bare = await post(service, '/QuickLogin', { mode: 'text', purpose: 'x', serviceId: '', tab: tabId });
    expect([bare.status, bare.body.code]).toEqual([403, 'session_missing']);
    page.close();
  });

  it('is refused for a tab registered before its ticket was taken or gone: the ticket is one per Register', async () => {
    const tabId = randomUUID();
    const page = await pageSocket(tabId);
    await registered(service, tabId);
    expect((await post(service, '/QuickLogin', { mode: 'text', purpose: 'With cookie', serviceId: '', tab: tabId }, { origin, cookie: page.cookie })).status).toBe(200);
    expect((await cookieless(tabId)).status).toBe(200);
    expect((await cookieless(tabId)).body.code).toBe('session_missing');
    page.close();
  });
});

describe('TabRegistry.firstVisitSession (bounds)', () => {
  const clock = new ManualClock();
  const log = pino({ level: 'silent' });
  const bindings = new Map<string, { session: string; origin: string | null }>();
  const tabs = {
    bind: async (tabId: string, session: string, _now: number, origin?: string | null) => {
      const bound = bindings.get(tabId);
      if (bound) return bound.session === session ? ('bound' as const) : ('conflict' as const);
      bindings.set(tabId, { session, origin: origin ?? null });
      return 'created' as const;
    },
    sessionOf: async (tabId: string) => bindings.get(tabId)?.session,
    bindingOf: async (tabId: string) => bindings.get(tabId),
    remove: async (tabId: string) => void bindings.delete(tabId),
    refresh: async () => undefined,
    purgeUnseen: async () => 0,
  };
  const broker = new MemoryBroker({ limit: 100, maxAgeMs: 60_000, presenceTtlMs: 1e12, idleStreamMs: 60_000 });
  const hub = new Hub({ broker, clock, log, onFallback: () => undefined }, { node: 'n', presenceTtlMs: 1e12, outboxMaxAgeMs: 60_000, tabIdleMs: 60_000, longPollGapMs: 10_000, maxTabsPerSession: 100 });
  const registry = new TabRegistry({ tabs, codes: { recentTabEvents: async () => [] }, writtenResults: { writtenAmong: async () => new Set<string>() }, hub, clock }, { resultReplayMs: 60_000, registrationWaitMs: 300, tabIdleMs: 60_000 });
  const socket = (): TabConnection => ({ transport: 'websocket', open: true, send: () => true, close: () => undefined });
  const PAGE = 'https://shop.example';

  it('a ticket lasts FIRST_VISIT_TICKET_MS after its Register', async () => {
    await registry.register('tab-ticket-late', 's1', socket(), `${PAGE}/a`);
    clock.advance(FIRST_VISIT_TICKET_MS + 1);
    expect(await registry.firstVisitSession('tab-ticket-late', PAGE)).toBeUndefined();
    await registry.register('tab-ticket-fresh', 's2', socket(), `${PAGE}/a`);
    clock.advance(FIRST_VISIT_TICKET_MS);
    expect(await registry.firstVisitSession('tab-ticket-fresh', PAGE)).toBe('s2');
  });

  it('a Register of a tab already bound to the session (a reconnect) leaves no ticket', async () => {
    await tabs.bind('tab-reconnect', 's3', 0, PAGE);
    await registry.register('tab-reconnect', 's3', socket(), `${PAGE}/a`);
    expect(await registry.firstVisitSession('tab-reconnect', PAGE)).toBeUndefined();
  });

  it('gives up when no Register comes within registrationWaitMs, and holds at most 4 requests per tab', async () => {
    const started = Date.now();
    const held = [1, 2, 3, 4].map(() => registry.firstVisitSession('tab-never', PAGE));
    // A fifth is not held: it is refused at once, before the four give up.
    expect(await registry.firstVisitSession('tab-never', PAGE)).toBeUndefined();
    expect(await Promise.all(held)).toEqual([undefined, undefined, undefined, undefined]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
  });
});
