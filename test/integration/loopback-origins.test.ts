import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { post, registered } from '../helpers/http.js';
import { freePort, startService, type TestService } from '../helpers/service.js';
import { TestTab } from '../helpers/tab.js';

/** A page's long-poll as the reference event script sends it, from `origin`. */
const poll = (service: TestService, origin: string, tabId: string) =>
  fetch(`${service.baseUrl}/ClientEvents`, {
    method: 'POST',
    headers: { 'content-type': 'text/plain', 'x-tabid': tabId, origin },
    body: `${origin}/`,
    signal: AbortSignal.timeout(10_000),
  }).catch((err: Error) => err);

describe('a loopback deployment (publicBaseUrl http://127.0.0.1:<port>)', () => {
  let service: TestService;
  let localhost: string;
  beforeAll(async () => {
    service = await startService();
    localhost = service.publicBaseUrl.replace('127.0.0.1', 'localhost');
  });
  afterAll(async () => service.close());

  it('serves a page opened at http://localhost:<port>: WebSocket handshake, Register and QR request (regression: origin_not_allowed)', async () => {
    expect(service.publicBaseUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const tab = await TestTab.open(service.wsUrl, { origin: localhost });
    await registered(service, tab.tabId);
    const qr = await post(service, '/QuickLogin', { mode: 'text', purpose: 'Log in', serviceId: '', tab: tab.tabId }, { cookie: tab.cookie, origin: localhost });
    expect(qr.status).toBe(200);
    expect(qr.body.signUrl).toMatch(new RegExp(`^${service.publicBaseUrl}/QuickLogin/Sign/`));
    // The code records the page's own origin, as the signer is shown it.
    const info = await fetch(qr.body.signUrl, { headers: { accept: 'application/json' } }).then((r) => r.json());
    expect(info.origin).toBe(localhost);
    tab.close();
  });

  it('answers CORS for the [::1] alias and not for another port', async () => {
    const preflight = (origin: string) =>
      fetch(`${service.baseUrl}/QuickLogin`, {
        method: 'OPTIONS',
        headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' },
      });
    const ipv6 = service.publicBaseUrl.replace('127.0.0.1', '[::1]');
    expect((await preflight(ipv6)).headers.get('access-control-allow-origin')).toBe(ipv6);
    const otherPort = `http://localhost:${Number(new URL(service.publicBaseUrl).port) + 1}`;
    expect((await preflight(otherPort)).status).toBe(403);
  });
});

describe('a deployment on a public name, listening on loopback', () => {
  let service: TestService;
  let port: string;
  beforeAll(async () => {
    const p = await freePort();
    port = String(p);
    service = await startService({ port: p, publicBaseUrl: `http://auth.example.test:${p}` });
  });
  afterAll(async () => service.close());

  it('gets no loopback aliases: localhost and 127.0.0.1 pages are refused on every path', async () => {
    for (const origin of [`http://localhost:${port}`, `http://127.0.0.1:${port}`]) {
      await expect(TestTab.open(service.wsUrl, { origin })).rejects.toThrow(/403/);
      const qr = await post(service, '/QuickLogin', { mode: 'text', purpose: 'Log in', serviceId: '', tab: '' }, { origin });
      expect([qr.status, qr.body.code]).toEqual([403, 'origin_not_allowed']);
      const polled = await poll(service, origin, randomUUID());
      expect(polled instanceof Response ? polled.status : polled).toBe(403);
    }
    // Its own origin still works.
    const tab = await TestTab.open(service.wsUrl, { origin: service.publicBaseUrl });
    await registered(service, tab.tabId);
    tab.close();
  });
});
