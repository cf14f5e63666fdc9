import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { refreshTabBindings } from '../../src/hub/binding-refresh.js';
import { post, registered } from '../helpers/http.js';
import { startService, type TestService } from '../helpers/service.js';
import { until } from '../helpers/until.js';
import { TestTab } from '../helpers/tab.js';

let service: TestService;
let jwt: string;

beforeAll(async () => {
  // Polls of a known session are held: keep the hold short so registering several tabs is quick.
  service = await startService({ tabsPerSession: 3, handlersPerTab: 2, openRegistration: true, longPollHoldSeconds: 1 });
  await post(service, '/Agent/Account/Create', { userName: 'limits', password: 'limits password' });
  jwt = (await post(service, '/Agent/Account/Login', { userName: 'limits', password: 'limits password', seconds: 3600 })).body.jwt;
});
afterAll(async () => service.close());

async function poll(tabId: string, cookie?: string) {
  const headers: Record<string, string> = { 'content-type': 'text/plain', 'x-tabid': tabId };
  if (cookie) headers.cookie = cookie;
  const response = await fetch(`${service.baseUrl}/ClientEvents`, { method: 'POST', headers, body: 'http://127.0.0.1/page' });
  return { status: response.status, type: response.headers.get('content-type'), retryAfter: response.headers.get('retry-after'), body: await response.json(), cookie: response.headers.get('set-cookie')?.split(';')[0] ?? cookie };
}

describe('tabs per session (regression: one session registered 18,000 tabs in 30 s)', () => {
  it('WebSocket: the Register of one tab too many is refused with close code 4429; another session is not affected', async () => {
    const first = await TestTab.open(service.wsUrl);
    await registered(service, first.tabId);
    const tabs = [first];
    for (let i = 0; i < 2; i++) {
      const tab = await TestTab.open(service.wsUrl, { cookie: first.cookie });
      await registered(service, tab.tabId);
      tabs.push(tab);
    }
    const extra = await TestTab.open(service.wsUrl, { cookie: first.cookie });
    expect(await extra.closed()).toEqual({ code: 4429, reason: 'tab_limit_reached' });
    expect(await service.store.tabs.sessionOf(extra.tabId)).toBeUndefined();
    const other = await TestTab.open(service.wsUrl);
    await registered(service, other.tabId);
    for (const t of [...tabs, other]) t.close();
  });

  it('long-poll: one tab too many answers 429 problem+json with Retry-After; an idle tab let go frees a slot', async () => {
    const { cookie } = await poll(randomUUID());
    await poll(randomUUID(), cookie);
    await poll(randomUUID(), cookie);
    const refused = await poll(randomUUID(), cookie);
    expect([refused.status, refused.type?.split(';')[0], refused.body.code]).toEqual([429, 'application/problem+json', 'tab_limit_reached']);
    expect(Number(refused.retryAfter)).toBeGreaterThan(0);
    service.clock.advance(service.app.tabwire.config.tabIdleSeconds * 1000);
    service.app.tabwire.hub.sweep();
    expect((await poll(randomUUID(), cookie)).status).toBe(200);
  });
});

describe('event handlers per tab', () => {
  it('a third handler on one tab is refused with 507; replacing or removing one is still allowed', async () => {
    const tab = await TestTab.open(service.wsUrl);
    await registered(service, tab.tabId);
    const register = (body: Record<string, string>) =>
      post(service, '/Agent/Xmpp/RegisterEventHandler', { tabId: tab.tabId, ...body }, { authorization: `Bearer ${jwt}`, cookie: tab.cookie });
    expect((await register({ namespace: 'urn:a', function: 'A' })).status).toBe(200);
    expect((await register({ namespace: 'urn:b', function: 'B' })).status).toBe(200);
    const refused = await register({ namespace: 'urn:c', function: 'C' });
    expect([refused.status, refused.body.code]).toEqual([507, 'handler_limit_reached']);
    expect((await register({ namespace: 'urn:b', function: 'B2' })).status).toBe(200);
    expect((await register({ namespace: 'urn:b', function: '' })).status).toBe(200);
    expect((await register({ namespace: 'urn:c', function: 'C' })).status).toBe(200);
    tab.close();
  });
});

describe('tab bindings left behind are purged (regression: they outlived restarts and locked a tab id for ever)', () => {
  it('deletes a binding no live connection refreshed within the retention, and keeps the ones this node holds', async () => {
    const live = await TestTab.open(service.wsUrl);
    await registered(service, live.tabId);
    // A binding written by a process that is gone: no hub holds it.
    const orphan = randomUUID();
    await service.store.tabs.bind(orphan, 'session-of-a-stopped-process', service.clock.now());
    const retentionMs = service.app.tabwire.config.tabBindingRetentionSeconds * 1000;
    const { hub, store, purge } = service.app.tabwire;
    const purgeBindings = async () => (await purge.run()).tab_bindings ?? 0;
    expect(await purgeBindings()).toBe(0);
    service.clock.advance(retentionMs / 2);
    await refreshTabBindings(hub, store.tabs, service.clock);
    expect(await purgeBindings()).toBe(0);
    expect(await service.store.tabs.sessionOf(orphan)).toBeDefined();
    service.clock.advance(retentionMs / 2 + 1);
    live.send({ cmd: 'Ping' });
    expect(await purgeBindings()).toBe(1);
    expect(await service.store.tabs.sessionOf(orphan)).toBeUndefined();
    expect(await service.store.tabs.sessionOf(live.tabId)).toBeDefined();
    // The tab id is free again for anyone.
    const taker = await TestTab.open(service.wsUrl, { tabId: orphan });
    await registered(service, orphan);
    taker.close();
    live.close();
  });
});

describe('tabs bound by a QR request alone (regression: one session bound 250 tab ids with a limit of 100, held ~10 min)', () => {
  it('count toward tabsPerSession (the 101st is refused as a Register would be) and are let go after tabIdleSeconds', async () => {
    const defaults = await startService();
    try {
      const limit = defaults.app.tabwire.config.tabsPerSession;
      expect(limit).toBe(100);
      // The session cookie comes from a Register; its own tab is one of the session's tabs.
      const page = await TestTab.open(defaults.wsUrl);
      await registered(defaults, page.tabId);
      const qr = (tabId: string, cookie: string) =>
        post(defaults, '/QuickLogin', { mode: 'text', purpose: 'Log in', serviceId: '', tab: tabId }, { cookie });
      const answers: { status: number; code?: string; retryAfter: string | null }[] = [];
      const qrOnly: string[] = [];
      for (let i = 0; i < 150; i++) {
        const tabId = randomUUID();
        qrOnly.push(tabId);
        const answer = await qr(tabId, page.cookie);
        answers.push({ status: answer.status, code: answer.body.code, retryAfter: answer.headers.get('retry-after') });
      }
      // 99 QR-only tabs beside the registered one make 100; every later one is refused, with Retry-After.
      expect(answers.slice(0, limit - 1).every((a) => a.status === 200)).toBe(true);
      for (const refused of answers.slice(limit - 1)) {
        expect(refused).toEqual({ status: 429, code: 'tab_limit_reached', retryAfter: String(defaults.app.tabwire.config.tabIdleSeconds) });
      }
      // A refused one is not bound; a Register of one more tab is refused the same way.
      expect(await defaults.store.tabs.sessionOf(qrOnly[limit - 1]!)).toBeUndefined();
      const extra = await TestTab.open(defaults.wsUrl, { cookie: page.cookie });
      expect(await extra.closed()).toEqual({ code: 4429, reason: 'tab_limit_reached' });

      // After tabIdleSeconds without a connection, the sweep lets the QR-only tabs go: the first is free for another session.
      defaults.clock.advance(defaults.app.tabwire.config.tabIdleSeconds * 1000);
      defaults.app.tabwire.hub.sweep(); // the registered page, connected, stays
      await until(async () => (await defaults.store.tabs.sessionOf(qrOnly[0]!)) === undefined, 'the QR-only binding to go');
      expect(await defaults.store.tabs.sessionOf(page.tabId)).toBeDefined();
      const other = await TestTab.open(defaults.wsUrl, { tabId: qrOnly[0]! });
      await registered(defaults, qrOnly[0]!);
      expect(await defaults.store.tabs.sessionOf(qrOnly[0]!)).not.toBe(await defaults.store.tabs.sessionOf(page.tabId));
      // And the session may bind new tab ids by QR request again.
      expect((await qr(randomUUID(), page.cookie)).status).toBe(200);
      other.close();
      page.close();
    } finally {
      await defaults.close();
    }
  });
});
