import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDelayProxy, type DelayProxy } from '../helpers/delay-proxy.js';
import { approveAt, expectLoginThroughSlowHandshake, expectNoAlert } from '../helpers/reference-checks.js';
import { referenceBrowser } from '../helpers/reference-browser.js';
import { recordDialogs, referencePageHtml, routeReferencePage } from '../helpers/reference-page.js';
import { freePort, startService, type TestService } from '../helpers/service.js';
import { until, DEADLINE_MS } from '../helpers/until.js';

// docs/events.md "A first visit without the cookie": a browser that never met the service opens a page that
// carries its own copy of the event scripts (nothing from the service hands out the session cookie first),
// and the page asks for a QR code at load, while its WebSocket handshake is held back 1.5 s by a slow
// network (a proxy in front of the service, the page's origin). The compatibility switch is off.
const newContext = referenceBrowser();

describe('a first visit to a page with its own copy of the scripts, handshake held back 1.5 s', () => {
  let service: TestService;
  let proxy: DelayProxy;
  let origin: string;

  beforeAll(async () => {
    const port = await freePort();
    proxy = await startDelayProxy({ targetPort: port });
    origin = `http://127.0.0.1:${proxy.port}`;
    service = await startService({ port, publicBaseUrl: origin, devApproval: 'on' });
  });
  afterAll(async () => {
    await proxy?.close();
    await service?.close();
  });

  for (const generation of ['older', 'newer'] as const) {
    it(`reference stand-ins (${generation} event script): the first QR request, sent before the handshake, shows a code; signing delivers`, async () => {
      const context = await newContext([origin]);
      await routeReferencePage(context, origin, '/login.html', referencePageHtml({ quickLogin: { mode: 'text', purpose: `First visit, ${generation}` } }));
      expect(await context.cookies(origin), 'a browser that never met the service').toEqual([]);
      const qrCookies: Array<string | undefined> = [];
      context.on('request', (request) => {
        if (request.method() === 'POST' && new URL(request.url()).pathname === '/QuickLogin') void request.allHeaders().then((h) => qrCookies.push(h.cookie));
      });
      await expectLoginThroughSlowHandshake({
        context,
        proxy,
        url: `${origin}/login.html${generation === 'newer' ? '?csi=newer' : ''}`,
        approve: (signUrl) => approveAt(service.baseUrl, signUrl),
        purpose: `First visit, ${generation}`,
      });
      // The first QR request went before the handshake had set the cookie.
      expect(qrCookies[0], 'the first QR request carried no cookie').toBeUndefined();
    });
  }

  it('tabwire\'s own Events.js as the site\'s own copy, a QR request at load: shows a code; signing delivers', async () => {
    const context = await newContext([origin]);
    const script = readFileSync('dist/public/Events.js', 'utf8');
    await context.route(`${origin}/site/events.js`, (route) => route.fulfill({ contentType: 'text/javascript; charset=utf-8', body: script }));
    await context.route(`${origin}/site/login.html`, (route) =>
      route.fulfill({
        contentType: 'text/html; charset=utf-8',
        body: `<!doctype html><html><head><script src="/site/events.js"></script><script>
          window.__got = [];
          Events.on('SignatureReceived', (data) => window.__got.push(data.Purpose));
          fetch('/QuickLogin', { method: 'POST', headers: { 'Content-Type': 'application/json' },
            body: JSON.stringify({ serviceId: '', tab: Events.tabId, mode: 'text', purpose: 'First visit, own script' }) })
            .then((r) => r.json().then((body) => { window.__answer = { status: r.status, body }; }));
        </script></head><body></body></html>`,
      }),
    );
    expect(await context.cookies(origin), 'a browser that never met the service').toEqual([]);
    const page = await context.newPage();
    const dialogs = recordDialogs(page);
    proxy.webSocketDelayMs = 1500;
    const seen = proxy.webSocketsSeen;
    try {
      const qrCookies: Array<string | undefined> = [];
      page.on('request', (request) => {
        if (request.method() === 'POST' && new URL(request.url()).pathname === '/QuickLogin') void request.allHeaders().then((h) => qrCookies.push(h.cookie));
      });
      await page.goto(`${origin}/site/login.html`);
      await page.waitForFunction(() => (window as any).__answer !== undefined, undefined, { timeout: DEADLINE_MS });
      const answer = await page.evaluate(() => (window as any).__answer as { status: number; body: { signUrl?: string; text?: string } });
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      expect(answer.body.text, 'a code to show').toBeTruthy();
      expect(proxy.webSocketsSeen, 'the handshake went through the slow proxy').toBeGreaterThan(seen);
      expect(qrCookies[0], 'the QR request carried no cookie').toBeUndefined();
      await approveAt(service.baseUrl, answer.body.signUrl!);
      await until(async () => (await page.evaluate(() => (window as any).__got.length as number)) > 0, 'SignatureReceived');
      expect(await page.evaluate(() => (window as any).__got as string[])).toEqual(['First visit, own script']);
      expectNoAlert(dialogs, 'alert');
    } finally {
      proxy.webSocketDelayMs = 0;
      await context.close();
    }
  });
});
