import { DEADLINE_MS } from '../helpers/until.js';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../helpers/browser.js';
import { approveAt, expectNoAlert, freshContext, pageSettles } from '../helpers/reference-checks.js';
import { recordDialogs, referencePageHtml, routeReferencePage } from '../helpers/reference-page.js';
import { startService, type TestService } from '../helpers/service.js';

// Issue 10's acceptance, loopback aliases: a deployment whose public base URL says 127.0.0.1 works for
// a browser that opened it as localhost too (the demo page and a page written for the reference deployments).
let browser: Browser;
beforeAll(async () => {
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
});
const newContext = (origins: string[]) => freshContext(browser, origins);

describe('localhost and 127.0.0.1 both work on a loopback deployment (publicBaseUrl says 127.0.0.1)', () => {
  let service: TestService;
  beforeAll(async () => {
    service = await startService();
  });
  afterAll(async () => {
    await service?.close();
  });
  const approve = (signUrl: string) => approveAt(service.baseUrl, signUrl);

  // 127.0.0.1 first: it works today, so a failure at localhost is about the alias, not the test.
  const origins = () => [service.baseUrl, `http://localhost:${new URL(service.baseUrl).port}`];

  it('the demo page at http://localhost:<port>/ and http://127.0.0.1:<port>/ gets a code and the signed result', async () => {
    for (const origin of origins()) {
      const context = await newContext([origin]);
      const page = await context.newPage();
      await page.goto(`${origin}/`);
      // The demo asks again after an error (2 s): wait for a shown code, and say what the page showed if none comes.
      const shown = await page
        .waitForFunction(() => {
          const img = document.getElementById('qr') as HTMLImageElement;
          return img.complete && img.naturalWidth > 0;
        }, undefined, { timeout: DEADLINE_MS })
        .then(() => true, () => false);
      expect(shown, `${origin}: no QR code shown; status: ${await page.textContent('#status')}`).toBe(true);
      await approve((await page.getAttribute('#same-device', 'href'))!);
      await page.waitForSelector('#result:not([hidden])', { timeout: DEADLINE_MS });
      expect(await page.textContent('#identity')).toContain('Ada');
      await context.close();
    }
  });

  it('the reference page at localhost and at 127.0.0.1 registers, gets codes without an alert, and receives SignatureReceived', async () => {
    for (const origin of origins()) {
      const context = await newContext([origin]);
      await routeReferencePage(context, origin, '/loopback.html', referencePageHtml({ quickLogin: { mode: 'text', purpose: `Login at ${origin}` } }));
      const page = await context.newPage();
      const dialogs = recordDialogs(page);
      await page.goto(`${origin}/loopback.html`);
      const state = await pageSettles(page, dialogs, (s) => s.qr.length > 0, `the first QR answer at ${origin}`);
      expectNoAlert(dialogs, `${origin}: alert`);
      await approve(state.qr.at(-1)!.signUrl);
      const after = await pageSettles(page, dialogs, (s) => s.signatures.length > 0, `SignatureReceived at ${origin}`);
      expect(after.signatures[0].Purpose).toBe(`Login at ${origin}`);
      expectNoAlert(dialogs, `${origin}: alert`);
      await context.close();
    }
  });
});
