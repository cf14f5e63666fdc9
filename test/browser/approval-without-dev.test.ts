import { describe, expect, it } from 'vitest';
import { useServiceAndChromium } from '../helpers/browser.js';
import { post } from '../helpers/http.js';

// The approval page where development approval is off (every deployment not on loopback): no dead buttons,
// but the ways that do approve, the web wallet with this request and the reference signer's command.
const rig = useServiceAndChromium({ devApproval: 'off' });

describe('the approval page without development approval', () => {
  it('shows no buttons and says how to approve: a wallet link carrying the request, and the CLI command', async () => {
    const qr = await post(rig.service, '/QuickLogin', { mode: 'text', purpose: 'Log in to the shop', serviceId: '', tab: '' }, { origin: new URL(rig.service.publicBaseUrl).origin });
    expect(qr.status).toBe(200);
    const signUrl = rig.service.baseUrl + new URL(qr.body.signUrl as string).pathname;
    const page = await rig.browser.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(signUrl);
    await page.waitForSelector('#how', { state: 'visible' });
    expect(await page.isVisible('#approve')).toBe(false);
    expect(await page.isVisible('#reject')).toBe(false);
    expect(await page.textContent('#purpose')).toBe('Log in to the shop');
    expect(await page.getAttribute('#wallet-link', 'href')).toBe(`/wallet/#sign=${encodeURIComponent(signUrl)}`);
    expect(await page.textContent('#cli-command')).toBe(`tabwire sign '${signUrl}' --key FILE`);
    // The wallet link opens the wallet with the request (it asks to be set up first on a new browser).
    await page.click('#wallet-link');
    await page.waitForURL(/\/wallet\/#sign=/);
    expect(errors).toEqual([]);
    await page.close();
  });
});
