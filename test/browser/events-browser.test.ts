import { DEADLINE_MS } from '../helpers/until.js';
import { mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BrowserContext, Page } from 'playwright-core';
import { HOST_A, HOST_B, selfSignedCertificate, useServiceAndChromium } from '../helpers/browser.js';
import { deliverToTab } from '../helpers/http.js';
import { freePort, startService, type TestService } from '../helpers/service.js';

// Real headless Chromium (Debian's) against a real tabwire on loopback.
const rig = useServiceAndChromium();

async function openDemo(context: BrowserContext): Promise<Page> {
  const page = await context.newPage();
  await page.goto(`${rig.service.baseUrl}/`);
  await page.waitForFunction(() => (document.getElementById('qr') as HTMLImageElement).src.includes('/QuickLogin/Qr/'));
  return page;
}

const tabIdOf = (page: Page) => page.evaluate(() => (window as any).Events.tabId as string);
const transportOf = (page: Page) => page.evaluate(() => (window as any).Events.stats.transport as string);

describe('the demo page in Chromium', () => {
  // The screenshot goes to the git-ignored tmp/ (the docs image is made on purpose by `npm run docs:screenshot`).
  it('shows the signed identity after same-device approval over WebSocket (screenshot in tmp/screenshots/demo.png)', async () => {
    const context = await rig.browser.newContext({ viewport: { width: 900, height: 760 } });
    const page = await openDemo(context);
    expect(await transportOf(page)).toBe('websocket');
    const [approval] = await Promise.all([context.waitForEvent('page'), page.click('#same-device')]);
    await approval.waitForSelector('#approve:not([disabled])');
    expect(await approval.textContent('#purpose')).toBe('Log in to the tabwire demo');
    await approval.click('#approve');
    await approval.waitForFunction(() => document.getElementById('outcome')!.textContent!.startsWith('Approved'));
    await page.waitForSelector('#result:not([hidden])');
    const table = await page.textContent('#identity');
    expect(table).toContain('Ada');
    expect(table).toContain('Lovelace');
    mkdirSync('tmp/screenshots', { recursive: true });
    await page.screenshot({ path: 'tmp/screenshots/demo.png' });
    await context.close();
  });

  it('works with WebSocket unavailable, over long-poll', async () => {
    const context = await rig.browser.newContext();
    await context.addInitScript(() => Object.defineProperty(window, 'WebSocket', { value: undefined }));
    const page = await openDemo(context);
    expect(await transportOf(page)).toBe('longpoll');
    const signUrl = await page.getAttribute('#same-device', 'href');
    const approved = await fetch(`${signUrl}/Dev`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"decision":"approve"}' });
    expect(approved.status).toBe(200);
    await page.waitForSelector('#result:not([hidden])');
    expect(await page.textContent('#identity')).toContain('Ada');
    await context.close();
  });

  it('delivers an event sent while the connection is cut exactly once after it reconnects', async () => {
    const context = await rig.browser.newContext();
    const page = await openDemo(context);
    await page.evaluate(() => {
      (window as any).probes = [];
      (window as any).Events.on('Probe', (data: unknown) => (window as any).probes.push(data));
    });
    const tabId = await tabIdOf(page);
    for (const socket of rig.service.app.websocketServer.clients) socket.terminate();
    await deliverToTab(rig.service, tabId, { type: 'Probe', data: 'while-cut' });
    await page.waitForFunction(() => (window as any).probes.length >= 1, undefined, { timeout: DEADLINE_MS });
    await deliverToTab(rig.service, tabId, { type: 'Probe', data: 'after' });
    // A marker last: the tab's events arrive in order, so once it is in, a duplicate of either would be too.
    await deliverToTab(rig.service, tabId, { type: 'Probe', data: 'marker' });
    await page.waitForFunction(() => (window as any).probes.includes('marker'));
    expect(await page.evaluate(() => (window as any).probes)).toEqual(['while-cut', 'after', 'marker']);
    expect(await page.evaluate(() => (window as any).Events.stats.reconnects)).toBeGreaterThanOrEqual(1);
    await context.close();
  });

  it('never executes an event type that is JavaScript', async () => {
    const context = await rig.browser.newContext();
    const page = await openDemo(context);
    const dialogs: string[] = [];
    page.on('dialog', (d) => {
      dialogs.push(d.message());
      void d.dismiss();
    });
    await page.evaluate(() => {
      (window as any).sentinel = [];
      (window as any).Events.on('Sentinel', (data: unknown) => (window as any).sentinel.push(data));
    });
    const tabId = await tabIdOf(page);
    for (const type of ['window.pwned=true', 'alert(1)', 'constructor', '__proto__', 'toString', 'NOP;window.pwned=true']) {
      await deliverToTab(rig.service, tabId, { type, data: 'x' });
    }
    await deliverToTab(rig.service, tabId, { type: 'Sentinel', data: 'done' });
    await page.waitForFunction(() => (window as any).sentinel.length === 1);
    expect(await page.evaluate(() => (window as any).pwned)).toBeUndefined();
    expect(dialogs).toEqual([]);
    await context.close();
  });

  it('keeps its tab ID across a reload', async () => {
    const context = await rig.browser.newContext();
    const page = await openDemo(context);
    const before = await tabIdOf(page);
    await page.reload();
    await page.waitForFunction(() => (window as any).Events !== undefined);
    expect(await tabIdOf(page)).toBe(before);
    await context.close();
  });
});

describe('a page written for the reference clients', () => {
  it('gets SignatureReceived through its global function, with a QR request sent as the reference script sends it', async () => {
    const context = await rig.browser.newContext();
    // The page is served at the service's own origin (as the reference deployments do) by the test.
    await context.grantPermissions(['local-network-access'], { origin: rig.service.baseUrl }).catch(() => undefined);
    const page = await context.newPage();
    await page.route(`${rig.service.baseUrl}/reference-page.html`, (route) =>
      route.fulfill({
        contentType: 'text/html',
        body: `<!doctype html><html><head><script src="/Events.js"></script><script>
          function SignatureReceived(data) { window.got = data; }
          function ask() {
            fetch('/QuickLogin', { method: 'POST', headers: { 'Content-Type': 'application/json' },
              body: JSON.stringify({ serviceId: '', tab: Events.tabId, mode: 'text', purpose: 'Reference login' }) })
              .then((r) => r.json()).then((body) => { if (body.signUrl) window.signUrl = body.signUrl; else setTimeout(ask, 300); });
          }
          Events.ready.then(ask);
        </script></head><body></body></html>`,
      }),
    );
    await page.goto(`${rig.service.baseUrl}/reference-page.html`);
    await page.waitForFunction(() => (window as any).signUrl !== undefined, undefined, { timeout: DEADLINE_MS });
    const signUrl = await page.evaluate(() => (window as any).signUrl as string);
    const approved = await fetch(`${signUrl}/Dev`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"decision":"approve"}' });
    expect(approved.status).toBe(200);
    await page.waitForFunction(() => (window as any).got !== undefined);
    expect(await page.evaluate(() => (window as any).got.Purpose)).toBe('Reference login');
    await context.close();
  });
});

describe('page on host A, tabwire on host B, over HTTPS', () => {
  let tabwireB: TestService;
  let pageServer: Server;
  let pageOrigin: string;

  beforeAll(async () => {
    const tls = selfSignedCertificate();
    const portA = await freePort();
    const portB = await freePort();
    pageOrigin = `https://${HOST_A}:${portA}`;
    tabwireB = await startService({
      port: portB,
      tlsCertFile: tls.certFile,
      tlsKeyFile: tls.keyFile,
      publicBaseUrl: `https://${HOST_B}:${portB}`,
      allowedOrigins: [pageOrigin],
      cookieSameSite: 'none',
      devApproval: 'on',
    });
    const serviceHost = `${HOST_B}:${portB}`;
    // A page as a site would write it: the event host in a meta tag, QR requests with credentials.
    const html = `<!doctype html><html><head><meta charset="utf-8">
<meta name="tabwire-events" content="${serviceHost}">
<script src="https://${serviceHost}/Events.js"></script></head><body><pre id="out"></pre><script>
  Events.on('SignatureReceived', (data) => { window.result = data; });
  async function ask() {
    const response = await fetch('https://${serviceHost}/QuickLogin', {
      method: 'POST', credentials: 'include', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ mode: 'base64', purpose: 'Cross-site login', serviceId: '', tab: Events.tabId, propertyFilter: 'FIRST' }),
    });
    const body = await response.json();
    if (!response.ok) { window.lastError = body; setTimeout(ask, 300); return; }
    window.qr = body;
  }
  Events.ready.then(ask);
</script></body></html>`;
    pageServer = createServer({ cert: tls.cert, key: tls.key }, (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(html);
    });
    await new Promise<void>((resolve) => pageServer.listen(portA, '127.0.0.1', resolve));
  });

  afterAll(async () => {
    await new Promise((resolve) => pageServer?.close(resolve));
    await tabwireB?.close();
  });

  it('registers over wss, gets a QR code with the cross-site cookie, and receives the result', async () => {
    const context = await rig.browser.newContext({ ignoreHTTPSErrors: true });
    const page = await context.newPage();
    await page.goto(`${pageOrigin}/`);
    await page.waitForFunction(() => (window as any).qr !== undefined, undefined, { timeout: DEADLINE_MS });
    expect(await transportOf(page)).toBe('websocket');
    const qr = await page.evaluate(() => (window as any).qr);
    expect(qr.signUrl).toMatch(new RegExp(`^https://${HOST_B}:\\d+/QuickLogin/Sign/`));
    const cookies = await context.cookies(`https://${HOST_B}`);
    // Partitioned (CHIPS): kept even where third-party cookies are blocked, keyed to page A's site.
    expect(cookies.find((c) => c.name === 'tabwire_sid')).toMatchObject({ secure: true, sameSite: 'None', httpOnly: true, partitionKey: `https://${HOST_A}` });

    const approval = await context.newPage();
    await approval.goto(qr.signUrl);
    await approval.waitForSelector('#approve:not([disabled])');
    expect(await approval.textContent('#requester')).toBe(`${HOST_A}:${new URL(pageOrigin).port}`);
    await approval.click('#approve');
    await page.waitForFunction(() => (window as any).result !== undefined);
    expect(await page.evaluate(() => (window as any).result.Properties)).toEqual({ FIRST: 'Ada' });
    await context.close();
  });
});
