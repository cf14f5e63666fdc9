import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { refreshTabBindings } from '../../src/hub/binding-refresh.js';
import { post, registered } from '../helpers/http.js';
import { startService, type TestService } from '../helpers/service.js';
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
