import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../helpers/browser.js';
import { post } from '../helpers/http.js';
import { startPostgres, type PostgresServer } from '../helpers/postgres.js';
import { approveAt, expectNoAlert, freshContext, pageSettles } from '../helpers/reference-checks.js';
import { recordDialogs, referencePageHtml, referenceState, routeReferencePage } from '../helpers/reference-page.js';
import { startService, type TestService } from '../helpers/service.js';

// A short PostgreSQL outage as pages written for the reference deployments live through it, in Chromium with
// the stand-in of the older event script (docs/events.md "Outages"): a page that opens its channel during the
// outage — a WebSocket Register, or a first long-poll — is held until the store is back, so it shows no
// alert() and its socket is not closed (that script has no close handler); then a login reaches it.
let server: PostgresServer;
let service: TestService;
let browser: Browser;

beforeAll(async () => {
  [server, browser] = await Promise.all([startPostgres(), launchChromium()]);
  service = await startService({}, { databaseUrl: await server.createDatabase() });
});
afterAll(async () => {
  await browser?.close();
  await service?.close();
  await server?.stop();
});

/** A reference page (event script only) at the service's origin; `?nows=1` makes it long-poll. */
async function openPage(query: string): Promise<{ page: Page; dialogs: string[] }> {
  const context = await freshContext(browser, [service.baseUrl]);
  await routeReferencePage(context, service.baseUrl, '/outage.html', referencePageHtml());
  const page = await context.newPage();
  const dialogs = recordDialogs(page);
  // Not awaited past the load: the channel is what waits.
  await page.goto(`${service.baseUrl}/outage.html${query}`);
  return { page, dialogs };
}

/** A login for the page's tab: the QR request with the page's cookie, then the development approval. */
async function login(page: Page, purpose: string): Promise<void> {
  const { tabId } = await referenceState(page);
  const cookie = (await page.context().cookies(service.baseUrl)).map((c) => `${c.name}=${c.value}`).join('; ');
  const qr = await post(service, '/QuickLogin', { mode: 'text', purpose, serviceId: '', tab: tabId }, { cookie });
  expect(qr.status, JSON.stringify(qr.body)).toBe(200);
  await approveAt(service.baseUrl, qr.body.signUrl);
}

describe('reference pages during a short PostgreSQL outage', () => {
  it('a WebSocket and a long-polling page that connect during it see no alert and no close, then get their login', async () => {
    await server.down();
    let ws: { page: Page; dialogs: string[] };
    let lp: { page: Page; dialogs: string[] };
    try {
      ws = await openPage('');
      lp = await openPage('?nows=1');
      // Both reached the service: the socket opened and sent Register, the first poll went out; neither is answered.
      await pageSettles(ws.page, ws.dialogs, (s) => s.ref.registers === 1, 'the Register sent during the outage');
      await pageSettles(lp.page, lp.dialogs, (s) => s.ref.polls === 1, 'the first poll sent during the outage');
      const held = { ws: await referenceState(ws.page), lp: await referenceState(lp.page) };
      expect(held.ws.ref.events).toEqual([]);
      expect(held.ws.ref.closes).toEqual([]);
      expect(held.lp.ref.pollStatuses).toEqual([]);
    } finally {
      await server.up();
    }
    // The store is back: the held Register and poll go through; the page saw nothing of the outage.
    const wsState = await pageSettles(ws.page, ws.dialogs, (s) => s.ref.events.includes('CheckServerInstance'), 'the held Register served', 40_000);
    const lpState = await pageSettles(lp.page, lp.dialogs, (s) => s.ref.pollStatuses.length > 0, 'the held poll answered', 40_000);
    expect(wsState.ref.closes).toEqual([]);
    expect(lpState.ref.pollStatuses[0]).toBe(200);
    await login(ws.page, 'WebSocket page after the outage');
    await login(lp.page, 'long-polling page after the outage');
    const wsDone = await pageSettles(ws.page, ws.dialogs, (s) => s.signatures.length > 0, 'the WebSocket page’s login');
    const lpDone = await pageSettles(lp.page, lp.dialogs, (s) => s.signatures.length > 0, 'the long-polling page’s login');
    expect(wsDone.signatures.map((s) => s.Purpose)).toEqual(['WebSocket page after the outage']);
    expect(lpDone.signatures.map((s) => s.Purpose)).toEqual(['long-polling page after the outage']);
    expectNoAlert(ws.dialogs, 'the WebSocket page');
    expectNoAlert(lp.dialogs, 'the long-polling page');
    expect(wsDone.ref.closes).toEqual([]);
  }, 120_000);
});
