import { DEADLINE_MS } from '../helpers/until.js';
import { describe, expect, it } from 'vitest';
import type { BrowserContext, Page } from 'playwright-core';
import { useServiceAndChromium } from '../helpers/browser.js';
import { deliverToTab } from '../helpers/http.js';

// The QuickLogin helper (`Events.quickLogin`, docs/sdk.md) and the demo page that uses it, in real
// headless Chromium (Debian's) against a real tabwire on loopback. Needs dist/public/Events.js (`npm run build`).
const rig = useServiceAndChromium();

const decide = (signUrl: string, decision: 'approve' | 'reject') =>
  fetch(`${signUrl}/Dev`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ decision }) });

interface HelperLog {
  codes: Array<{ signUrl: string; text?: string; base64?: string; src?: string }>;
  results: Array<{ Purpose: string; Properties: Record<string, string> }>;
  rejected: unknown[];
  backend: number;
  errors: string[];
}

/** A page at the service's origin (served by the test) that loads /Events.js and starts the helper as told. */
async function helperPage(context: BrowserContext, options: { mode: string; refreshMs: number }): Promise<Page> {
  const page = await context.newPage();
  await page.route(`${rig.service.baseUrl}/helper-page.html`, (route) =>
    route.fulfill({
      contentType: 'text/html',
      body: `<!doctype html><html><head><script src="/Events.js"></script><script>
        const log = (window.log = { codes: [], results: [], rejected: [], backend: 0, errors: [] });
        window.login = Events.quickLogin({
          mode: ${JSON.stringify(options.mode)}, purpose: 'Helper login', propertyFilter: 'FIRST', refreshMs: ${options.refreshMs},
          onCode: (code) => log.codes.push(code),
          onResult: (result) => log.results.push(result),
          onRejected: (rejection) => log.rejected.push(rejection),
          onBackendDone: () => log.backend++,
          onError: (error) => log.errors.push(error.message),
        });
        /** Resolves after ms of the page's own clock. */
        window.pageWait = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
      </script></head><body></body></html>`,
    }),
  );
  await page.goto(`${rig.service.baseUrl}/helper-page.html`);
  return page;
}

/** Counts the page's QR requests as the browser sends them. */
function countQrRequests(page: Page): () => number {
  let count = 0;
  page.on('request', (request) => {
    if (request.method() === 'POST' && new URL(request.url()).pathname === '/QuickLogin') count++;
  });
  return () => count;
}

const logOf = (page: Page) => page.evaluate(() => (window as any).log as HelperLog);

describe('the QuickLogin helper in Chromium', () => {
  it('refreshes the code every refreshMs, stops on the result and calls onResult', async () => {
    const context = await rig.browser.newContext();
    const page = await helperPage(context, { mode: 'base64', refreshMs: 250 });
    const requests = countQrRequests(page);
    await page.waitForFunction(() => (window as any).log.codes.length >= 3, undefined, { timeout: DEADLINE_MS });
    const before = await logOf(page);
    expect(new Set(before.codes.map((c) => c.signUrl)).size).toBe(before.codes.length);
    expect(before.codes[0]!.base64).toMatch(/^iVBOR/);
    expect(before.errors).toEqual([]);

    expect((await decide(before.codes.at(-1)!.signUrl, 'approve')).status).toBe(200);
    await page.waitForFunction(() => (window as any).log.results.length === 1, undefined, { timeout: DEADLINE_MS });
    const atResult = await logOf(page);
    const requestsAtResult = requests();
    expect(atResult.results[0]).toMatchObject({ Purpose: 'Helper login', Properties: { FIRST: 'Ada' } });
    expect(await page.evaluate(() => (window as any).login.running)).toBe(false);
    // Four refresh periods of the page's own clock later, no code was asked for or shown.
    await page.evaluate(() => (window as any).pageWait(1000));
    const later = await logOf(page);
    expect(later.codes.length).toBe(atResult.codes.length);
    expect(requests()).toBe(requestsAtResult);
    await context.close();
  });

  it('calls onRejected and goes on with new codes; SignatureReceivedBE calls onBackendDone and stops', async () => {
    const context = await rig.browser.newContext();
    const page = await helperPage(context, { mode: 'text', refreshMs: 250 });
    await page.waitForFunction(() => (window as any).log.codes.length >= 1, undefined, { timeout: DEADLINE_MS });
    const first = (await logOf(page)).codes[0]!;
    expect(first.text).toContain('█');
    expect((await decide(first.signUrl, 'reject')).status).toBe(200);
    await page.waitForFunction(() => (window as any).log.rejected.length === 1, undefined, { timeout: DEADLINE_MS });
    const atRejection = (await logOf(page)).codes.length;
    await page.waitForFunction((n) => (window as any).log.codes.length >= n + 2, atRejection, { timeout: DEADLINE_MS });
    expect(await page.evaluate(() => (window as any).login.running)).toBe(true);

    await deliverToTab(rig.service, await page.evaluate(() => (window as any).Events.tabId as string), { type: 'SignatureReceivedBE', data: '' });
    await page.waitForFunction(() => (window as any).log.backend === 1, undefined, { timeout: DEADLINE_MS });
    expect(await page.evaluate(() => (window as any).login.running)).toBe(false);
    const atDone = (await logOf(page)).codes.length;
    await page.evaluate(() => (window as any).pageWait(1000));
    expect((await logOf(page)).codes.length).toBe(atDone);
    await context.close();
  });
});

async function openDemo(context: BrowserContext): Promise<Page> {
  const page = await context.newPage();
  await page.goto(`${rig.service.baseUrl}/`);
  await page.waitForFunction(() => (document.getElementById('qr') as HTMLImageElement).src.includes('/QuickLogin/Qr/'), undefined, { timeout: DEADLINE_MS });
  return page;
}

const statusOf = (page: Page) => page.textContent('#status');

describe('the demo page', () => {
  it('shows the identity with readable labels, and the approval page names the development identity', async () => {
    const context = await rig.browser.newContext();
    const page = await openDemo(context);
    const [approval] = await Promise.all([context.waitForEvent('page'), page.click('#same-device')]);
    await approval.waitForSelector('#approve:not([disabled])');
    const devId = await approval.textContent('#dev-id');
    expect(devId).toMatch(/^Ada Lovelace \(ada@example\.org\), \S+/);
    expect(await approval.textContent('.hint')).not.toMatch(/identity\s*\./);
    await approval.click('#approve');
    await page.waitForSelector('#result:not([hidden])');
    const rows = await page.$$eval('#identity tr', (trs) => trs.map((tr) => [tr.querySelector('th')!.textContent, tr.querySelector('td')!.textContent]));
    const shown = Object.fromEntries(rows);
    expect(shown).toMatchObject({ 'First name': 'Ada', 'Last name': 'Lovelace', Country: 'United Kingdom (GB)', 'E-mail': 'ada@example.org' });
    for (const raw of ['FIRST', 'LAST', 'COUNTRY', 'EMAIL']) expect(Object.keys(shown)).not.toContain(raw);
    // The identity the page shows is the one the approval page named.
    expect(devId).toContain(shown.Identity);
    await context.close();
  });

  it('keeps the rejection message while new codes come, until the next action', async () => {
    const context = await rig.browser.newContext();
    const page = await openDemo(context);
    const signUrl = (await page.getAttribute('#same-device', 'href'))!;
    expect((await decide(signUrl, 'reject')).status).toBe(200);
    await page.waitForFunction(() => /rejected/i.test(document.getElementById('status')!.textContent ?? ''), undefined, { timeout: DEADLINE_MS });
    // Two more codes (the demo asks every 2 s) and the message is still there.
    for (let i = 0; i < 2; i++) {
      const src = await page.getAttribute('#qr', 'src');
      await page.waitForFunction((old) => document.getElementById('qr')!.getAttribute('src') !== old, src, { timeout: DEADLINE_MS });
    }
    expect(await statusOf(page)).toMatch(/rejected/i);
    // Opening the approval page is the next action.
    await Promise.all([context.waitForEvent('page'), page.click('#same-device')]);
    await page.waitForFunction(() => document.getElementById('status')!.textContent === 'Waiting for a signature…');
    await context.close();
  });

  it('loads no resource that fails, the icon included', async () => {
    const context = await rig.browser.newContext();
    const failed: string[] = [];
    context.on('response', (response) => {
      if (response.status() >= 400) failed.push(`${response.status()} ${response.url()}`);
    });
    const page = await openDemo(context);
    const [approval] = await Promise.all([context.waitForEvent('page'), page.click('#same-device')]);
    await approval.waitForSelector('#approve:not([disabled])');
    // Headless Chromium may not fetch icons by itself: fetch the linked one from each page, as a browser would.
    for (const p of [page, approval]) {
      const icon = await p.evaluate(async () => {
        const href = document.querySelector<HTMLLinkElement>('link[rel="icon"]')!.href;
        const response = await fetch(href);
        return { href, status: response.status, type: response.headers.get('content-type') };
      });
      expect(icon).toMatchObject({ status: 200, type: 'image/png' });
    }
    expect(failed).toEqual([]);
    await context.close();
  });
});
