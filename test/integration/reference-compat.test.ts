import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchSignInfo, postDecision } from '../../src/cli/signer.js';
import { privateKeyFromPem } from '../../src/identity/keys.js';
import { post, registered } from '../helpers/http.js';
import { makeIdentity, startService, type TestService } from '../helpers/service.js';
import { TestTab } from '../helpers/tab.js';
import { until } from '../helpers/until.js';

/**
 * What pages written for the reference deployment need of the service beyond the simple set-up
 * (docs/events.md): QR requests that beat their tab's Register, cookie-less requests bound to the
 * tab's registered origin, restarts, and duplicated tabs.
 */
const PAGE_A = 'https://shop.example';
const PAGE_C = 'https://other.example';

async function approve(service: TestService, signUrl: string, who: Awaited<ReturnType<typeof makeIdentity>>): Promise<void> {
  const info = await fetchSignInfo(signUrl);
  expect((await postDecision(signUrl, info, who.identity.id, privateKeyFromPem(who.privateKeyPem), 'approve')).state).toBe('approved');
}

describe('a QR request that comes before its tab\'s Register (first visit, slow handshake)', () => {
  let service: TestService;
  let ada: Awaited<ReturnType<typeof makeIdentity>>;
  beforeAll(async () => {
    service = await startService();
    ada = await makeIdentity(service, { FIRST: 'Ada' });
  });
  afterAll(async () => service.close());

  it('the demo page and /Events.js hand out the session cookie, so the first QR request carries it', async () => {
    for (const path of ['/', '/Events.js']) {
      const response = await fetch(service.baseUrl + path);
      expect(response.status).toBe(200);
      expect(response.headers.get('set-cookie')).toMatch(/^tabwire_sid=[A-Za-z0-9_-]{43};/);
    }
  });

  it('succeeds with the session cookie and binds the tab to that session: only its Register receives the result', async () => {
    const cookie = (await fetch(`${service.baseUrl}/Events.js`)).headers.get('set-cookie')!.split(';')[0]!;
    const tabId = randomUUID();
    const qr = await post(service, '/QuickLogin', { mode: 'text', purpose: 'First visit', serviceId: '', tab: tabId }, { cookie });
    expect(qr.status).toBe(200);
    // Another session's Register of that tab is refused: the tab is the asking session's now.
    const intruder = await TestTab.open(service.wsUrl, { tabId });
    expect(await intruder.closed()).toEqual({ code: 4403, reason: 'tab_session_mismatch' });
    await approve(service, qr.body.signUrl, ada);
    // The page's own socket registers late and still gets the result.
    const page = await TestTab.open(service.wsUrl, { tabId, cookie });
    expect(((await page.next('SignatureReceived')).data as { Purpose: string }).Purpose).toBe('First visit');
    page.close();
  });
});

describe('cookie-less QR requests (allowCookielessQrRequests) come only from the origin the tab registered from', () => {
  let service: TestService;
  beforeAll(async () => {
    service = await startService({ allowCookielessQrRequests: true, allowedOrigins: [PAGE_A, PAGE_C] });
  });
  afterAll(async () => service.close());

  const cookieless = (tab: string, origin: string) => post(service, '/QuickLogin', { mode: 'text', purpose: 'x', serviceId: '', tab }, { origin });

  it('accepts the page\'s own origin and refuses a third origin, even an allowed one', async () => {
    const tab = await TestTab.open(service.wsUrl, { origin: PAGE_A, register: false });
    tab.send({ cmd: 'Register', tabId: tab.tabId, location: `${PAGE_A}/checkout?step=2` });
    await registered(service, tab.tabId);
    expect((await cookieless(tab.tabId, PAGE_A)).status).toBe(200);
    const third = await cookieless(tab.tabId, PAGE_C);
    expect([third.status, third.body.code]).toEqual([403, 'origin_not_allowed']);
    tab.close();
  });

  it('a long-poll tab registers its origin from the body (the page location)', async () => {
    const tabId = randomUUID();
    const response = await fetch(`${service.baseUrl}/ClientEvents`, { method: 'POST', headers: { 'content-type': 'text/plain', 'x-tabid': tabId, origin: PAGE_C }, body: `${PAGE_C}/login` });
    expect(response.status).toBe(200);
    expect((await cookieless(tabId, PAGE_C)).status).toBe(200);
    expect((await cookieless(tabId, PAGE_A)).status).toBe(403);
  });

  it('a cookie-less request that beats the tab\'s Register waits for it, then is judged by the registered origin', async () => {
    const tabId = randomUUID();
    const early = cookieless(tabId, PAGE_A);
    const tab = await TestTab.open(service.wsUrl, { origin: PAGE_A, tabId, register: false });
    tab.send({ cmd: 'Register', tabId, location: `${PAGE_A}/` });
    expect((await early).status).toBe(200);
    tab.close();
  });
});

describe('restarts', () => {
  let dir: string;
  let ada: Awaited<ReturnType<typeof makeIdentity>>;
  let first: TestService;
  beforeAll(async () => {
    first = await startService();
    dir = first.dir;
    ada = await makeIdentity(first, { FIRST: 'Ada' });
  });

  it('tells each Register the instance id, which changes with a restart; a shutdown fails the socket so older scripts retry', async () => {
    const sqliteFile = join(dir, 'tabwire.sqlite');
    const tab = await TestTab.open(first.wsUrl);
    await registered(first, tab.tabId);
    const before = (await tab.next('CheckServerInstance')).data as string;
    const errors: Error[] = [];
    tab.ws.on('error', (err) => errors.push(err));
    const qr = await post(first, '/QuickLogin', { mode: 'text', purpose: 'Across a restart', serviceId: '', tab: tab.tabId }, { cookie: tab.cookie });
    await approve(first, qr.body.signUrl, ada);
    await tab.next('SignatureReceived');
    const port = Number(new URL(first.baseUrl).port);
    await first.app.close();
    // Not a clean close: the older reference script reconnects only after a socket error.
    await until(() => tab.closeCode !== undefined, 'the socket to close');
    expect(errors.map((e) => e.message).join()).toMatch(/UTF-8/i);
    expect(tab.closeCode).not.toBe(1001);

    const second = await startService({ port }, { sqliteFile });
    try {
      const again = await TestTab.open(second.wsUrl, { tabId: tab.tabId, cookie: tab.cookie });
      const after = (await again.next('CheckServerInstance')).data as string;
      expect(after).not.toBe(before);
      // The result signed moments before the restart was written to the page before the clean stop: it is not sent
      // again (docs/events.md "Restarts"). One signed now arrives, and is the page's only result since.
      const next = await post(second, '/QuickLogin', { mode: 'text', purpose: 'After the restart', serviceId: '', tab: tab.tabId }, { cookie: tab.cookie });
      await approve(second, next.body.signUrl, ada);
      await again.next('SignatureReceived');
      expect(again.events.filter((e) => e.type === 'SignatureReceived').map((e) => (e.data as { Purpose: string }).Purpose)).toEqual(['After the restart']);
      again.close();
    } finally {
      await second.close();
      await first.store.close().catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('duplicated tabs (two pages with one window.name in one session)', () => {
  let service: TestService;
  beforeAll(async () => {
    service = await startService();
  });
  afterAll(async () => service.close());

  it('both WebSockets stay open and both receive every event', async () => {
    const one = await TestTab.open(service.wsUrl);
    await registered(service, one.tabId);
    const two = await TestTab.open(service.wsUrl, { tabId: one.tabId, cookie: one.cookie });
    await two.next('CheckServerInstance');
    const session = (await service.store.tabs.sessionOf(one.tabId))!;
    await service.app.tabwire.hub.deliver({ tabId: one.tabId, session }, { type: 'Shared', data: 1 });
    await one.next('Shared');
    await two.next('Shared');
    expect([one.closeCode, two.closeCode]).toEqual([undefined, undefined]);
    one.close();
    two.close();
  });
});
