import { describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { useServiceAndChromium } from '../helpers/browser.js';
import { post } from '../helpers/http.js';

// The approval page (public/sign.html, sign.js) in real headless Chromium on scan-limited codes
// (docs/relay.md): it binds the code by its fetch, keeps working on reload, says clearly when the code is
// too old or taken by another device, and shows who asks first and large.
const rig = useServiceAndChromium({ codeScanSeconds: 3 });

/** A new code asked for by a page on the service's own origin (no tab); its signUrl on the loopback address. */
async function signUrl(): Promise<string> {
  const qr = await post(rig.service, '/QuickLogin', { mode: 'text', purpose: 'Log in to the shop', serviceId: '', tab: '' }, { origin: new URL(rig.service.publicBaseUrl).origin });
  expect(qr.status).toBe(200);
  return rig.service.baseUrl + new URL(qr.body.signUrl as string).pathname;
}

const outcome = (page: Page) => page.textContent('#outcome');

async function openApproval(url: string, page: Page): Promise<void> {
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(url);
  // Loaded: either the buttons are enabled or the outcome says why not.
  await page.waitForFunction(() => !(document.getElementById('approve') as HTMLButtonElement).disabled || document.getElementById('outcome')!.textContent !== '');
  expect(errors).toEqual([]);
}

describe('the approval page on scan-limited codes', () => {
  it('binds the code, survives a reload, tells a second device the request is taken, and approves with the token', async () => {
    const url = await signUrl();
    const first = await rig.browser.newContext();
    const page = await first.newPage();
    await openApproval(url, page);
    expect(await page.isEnabled('#approve')).toBe(true);
    await page.reload();
    await openApproval(url, page);
    expect(await page.isEnabled('#approve')).toBe(true);

    const second = await rig.browser.newContext();
    const other = await second.newPage();
    await openApproval(url, other);
    expect(await other.isEnabled('#approve')).toBe(false);
    expect(await outcome(other)).toMatch(/^Another device or app has already opened this request, and only it can answer\. If that was not you, do not go on/);

    await page.click('#approve');
    await page.waitForFunction(() => document.getElementById('outcome')!.textContent !== '');
    expect(await outcome(page)).toBe('Approved. You can return to the page that asked.');
    await Promise.all([first.close(), second.close()]);
  });

  it('says the QR code is too old when it is first opened after the limit', async () => {
    const url = await signUrl();
    rig.service.clock.advance(4000);
    const context = await rig.browser.newContext();
    const page = await context.newPage();
    await openApproval(url, page);
    expect(await page.isEnabled('#approve')).toBe(false);
    expect(await outcome(page)).toMatch(/^This QR code is too old: it must be opened within a few seconds of being shown\. Go back to the page/);
    await context.close();
  });

  it('shows the requesting origin first and large: before the purpose, at least half again the size of the text', async () => {
    const context = await rig.browser.newContext({ viewport: { width: 390, height: 844 } });
    const page = await context.newPage();
    await openApproval(await signUrl(), page);
    const origin = new URL(rig.service.publicBaseUrl);
    expect(await page.textContent('#requester')).toBe(origin.host);
    expect(await page.textContent('#origin')).toBe(origin.origin);
    const layout = await page.evaluate(() => {
      const size = (id: string) => parseFloat(getComputedStyle(document.getElementById(id)!).fontSize);
      const top = (id: string) => document.getElementById(id)!.getBoundingClientRect().top;
      return { requester: size('requester'), body: parseFloat(getComputedStyle(document.body).fontSize), requesterTop: top('requester'), purposeTop: top('purpose') };
    });
    expect(layout.requester).toBeGreaterThanOrEqual(layout.body * 1.5);
    expect(layout.requesterTop).toBeLessThan(layout.purposeTop);
    await context.close();
  });
});
