import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium } from 'playwright-core';
import { PNG } from 'pngjs';
import { decodePng } from '../helpers/qr-decode.js';
import { approvedWallet, useWalletBrowser } from '../helpers/wallet-browser.js';

// The web wallet (docs/wallet.md) in a real Chromium against a real tabwire, signing: requests opened
// through the app link, a QR image or the camera, approved or rejected, by a wallet set up as
// wallet-account.test.ts does it step by step (a key, an account, an identity the operator approved).
const rig = useWalletBrowser();
const { watch, openWallet, openTab, qrFor } = rig;
let publicKey: string;
let legalId: string;

beforeAll(async () => {
  ({ publicKey, legalId } = await approvedWallet(rig));
});
// The pages of this file log no errors either (wallet-account.test.ts checks its own in its last test).
afterAll(() => {
  expect(rig.consoleErrors).toEqual([]);
});

/**
 * One frame of YUV4MPEG2 (the file format Chromium's fake camera plays in a loop): the PNG's grey levels
 * centred on white, colour planes neutral.
 */
function y4mOf(png: PNG, width: number, height: number): Buffer {
  const y = Buffer.alloc(width * height, 235);
  const left = Math.floor((width - png.width) / 2);
  const top = Math.floor((height - png.height) / 2);
  for (let row = 0; row < png.height; row++) {
    for (let col = 0; col < png.width; col++) {
      const i = (row * png.width + col) * 4;
      y[(top + row) * width + left + col] = png.data[i]! < 128 ? 16 : 235;
    }
  }
  const chroma = Buffer.alloc((width / 2) * (height / 2) * 2, 128);
  return Buffer.concat([Buffer.from(`YUV4MPEG2 W${width} H${height} F10:1 Ip A1:1 C420jpeg\nFRAME\n`), y, chroma]);
}

describe('the web wallet in Chromium', () => {
  it('an app link shows who asks, the purpose, the disclosed properties and the expiry; Approve → the waiting tab gets SignatureReceived with the wallet key', async () => {
    const tab = await openTab();
    const { signUrl } = await qrFor(tab, { purpose: 'Log in to the library', propertyFilter: 'FIRST, COUNTRY' });
    const page = await openWallet(`/wallet/#sign=${encodeURIComponent(String(signUrl))}`);
    await page.waitForSelector('#request:not([hidden])');
    // The address is cleaned: a reload does not open the request again.
    expect(new URL(page.url()).hash).toBe('');
    expect(await page.textContent('#request-origin')).toBe(rig.service.baseUrl);
    expect(await page.textContent('#request-purpose')).toBe('Log in to the library');
    expect(await page.locator('#request-properties li').allTextContents()).toEqual(['First name: Grace', 'Country: US']);
    expect(await page.getAttribute('#request-expires', 'datetime')).toMatch(/^\d{4}-\d\d-\d\dT/);
    // Focus moves to the request, so a screen reader reads who asks first.
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('request');
    // Nothing wider than the 390 px screen (no sideways scrolling), and who asks is in view.
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    expect(await page.locator('#request-origin').isVisible()).toBe(true);
    mkdirSync('tmp/screenshots', { recursive: true });
    await page.screenshot({ path: 'tmp/screenshots/wallet-request.png' });
    await page.click('#approve');
    await page.waitForFunction(() => document.getElementById('request-outcome')!.textContent!.startsWith('Approved'));
    const received = await tab.next('SignatureReceived');
    const result = received.data as Record<string, unknown>;
    expect(result.ClientPubKey).toBe(publicKey);
    expect(result.Id).toBe(legalId);
    expect(result.Purpose).toBe('Log in to the library');
    expect(result.Properties).toEqual({ FIRST: 'Grace', COUNTRY: 'US' });
    expect(await page.isDisabled('#approve')).toBe(true);
    await page.close();
    tab.close();
  });

  it('?sign= works too; Reject → the waiting tab gets SignatureRejected', async () => {
    const tab = await openTab();
    const { signUrl } = await qrFor(tab, { purpose: 'Pay 10 €' });
    const page = await openWallet(`/wallet?sign=${encodeURIComponent(String(signUrl))}`);
    await page.waitForSelector('#request:not([hidden])');
    expect(await page.textContent('#request-purpose')).toBe('Pay 10 €');
    await page.keyboard.press('Tab');
    // Keyboard only: Tab from the request card reaches Approve, then Reject.
    await page.focus('#reject');
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => document.getElementById('request-outcome')!.textContent!.startsWith('Rejected'));
    const rejected = await tab.next('SignatureRejected');
    expect(rejected.data).toMatchObject({ Purpose: 'Pay 10 €' });
    expect(tab.events.some((e) => e.type === 'SignatureReceived')).toBe(false);
    await page.close();
    tab.close();
  });

  it('a scan-limited code (relay protection): the wallet sends back the binding its fetch got, and the approval counts', async () => {
    const tab = await openTab();
    const { signUrl } = await qrFor(tab, { purpose: 'Log in, bound', scanSeconds: 30 });
    const page = await openWallet(`/wallet/#sign=${encodeURIComponent(String(signUrl))}`);
    await page.waitForSelector('#request:not([hidden])');
    await page.click('#approve');
    await page.waitForFunction(() => document.getElementById('request-outcome')!.textContent!.startsWith('Approved'));
    const received = await tab.next('SignatureReceived');
    expect(received.data).toMatchObject({ Purpose: 'Log in, bound' });
    // The code is bound to the wallet's fetch: another app fetching it now is refused.
    expect((await fetch(String(signUrl), { headers: { accept: 'application/json' } })).status).not.toBe(200);
    await page.close();
    tab.close();
  });

  it('refuses a signUrl of another host than the one the identity belongs to, and says why', async () => {
    const port = new URL(rig.service.baseUrl).port;
    const foreign = `http://localhost:${port}/QuickLogin/Sign/AAAAAAAAAAAAAAAAAAAAAA`;
    const page = await openWallet(`/wallet/#sign=${encodeURIComponent(foreign)}`);
    await page.waitForFunction(() => document.getElementById('alert')!.textContent !== '');
    expect(await page.textContent('#alert')).toBe(
      `This request is for localhost:${port}, but your identity belongs to 127.0.0.1:${port}. The wallet signs only for the service your identity belongs to, so it will not sign this.`,
    );
    expect(await page.isHidden('#request')).toBe(true);
    await page.close();
  });

  it('reads the QR code of the service PNG (the decoder path) and opens its request', async () => {
    const tab = await openTab();
    const code = await qrFor(tab, { mode: 'image', purpose: 'Scanned login' });
    const png = Buffer.from(await (await fetch(String(code.src))).arrayBuffer());
    expect(decodePng(png)).toBe(code.signUrl);
    const page = await openWallet();
    // Desktop Linux Chromium has no BarcodeDetector: the bundled decoder reads the image.
    await page.waitForSelector('body[data-decoder]');
    expect(await page.getAttribute('body', 'data-decoder')).toBe('jsQR');
    await page.setInputFiles('#qr-file', { name: 'code.png', mimeType: 'image/png', buffer: png });
    await page.waitForSelector('#request:not([hidden])');
    expect(await page.inputValue('#sign-url')).toBe(code.signUrl);
    expect(await page.textContent('#request-purpose')).toBe('Scanned login');
    await page.click('#approve');
    expect(((await tab.next('SignatureReceived')).data as Record<string, unknown>).ClientPubKey).toBe(publicKey);
    await page.close();
    tab.close();
  });

  it('uses the browser\'s BarcodeDetector when it reads QR codes (a stand-in here: desktop Linux Chromium has none)', async () => {
    const tab = await openTab();
    const { signUrl } = await qrFor(tab, { purpose: 'Native scan' });
    const native = await rig.browser.newContext({ viewport: { width: 390, height: 844 } });
    await native.addInitScript((text: string) => {
      (window as any).BarcodeDetector = class {
        static async getSupportedFormats() {
          return ['qr_code'];
        }
        async detect() {
          return [{ rawValue: text }];
        }
      };
    }, String(signUrl));
    const page = watch(await native.newPage());
    await page.goto(`${rig.service.baseUrl}/wallet/`);
    await page.waitForSelector('body[data-decoder]');
    expect(await page.getAttribute('body', 'data-decoder')).toBe('BarcodeDetector');
    const icon = Buffer.from(await (await fetch(`${rig.service.baseUrl}/wallet/icon-192.png`)).arrayBuffer());
    await page.setInputFiles('#qr-file', { name: 'photo.png', mimeType: 'image/png', buffer: icon });
    await page.waitForSelector('#request:not([hidden])');
    expect(await page.textContent('#request-purpose')).toBe('Native scan');
    // This browser has no wallet set up: it shows the request and says why it cannot sign.
    expect(await page.textContent('#request-refusal')).toBe('Make a key first (step 1).');
    await native.close();
    tab.close();
  });

  it('scans a QR code with the camera (a fake camera that films the service PNG)', async () => {
    const tab = await openTab();
    const code = await qrFor(tab, { mode: 'image', purpose: 'Camera login' });
    const png = PNG.sync.read(Buffer.from(await (await fetch(String(code.src))).arrayBuffer()));
    const video = join(rig.service.dir, 'qr.y4m');
    writeFileSync(video, y4mOf(png, 640, 480));
    const camera = await chromium.launch({
      executablePath: '/usr/bin/chromium',
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--use-fake-device-for-media-stream', '--use-fake-ui-for-media-stream', `--use-file-for-fake-video-capture=${video}`],
    });
    try {
      const phone = await camera.newContext({ viewport: { width: 390, height: 844 }, permissions: ['camera'] });
      const page = watch(await phone.newPage());
      await page.goto(`${rig.service.baseUrl}/wallet/`);
      await page.waitForSelector('body[data-ready="1"]');
      await page.click('#scan');
      await page.waitForSelector('#request:not([hidden])');
      expect(await page.textContent('#scan-status')).toBe('Code read.');
      expect(await page.textContent('#request-purpose')).toBe('Camera login');
      // The camera is stopped once a code is read.
      expect(await page.getAttribute('#scan', 'aria-pressed')).toBe('false');
      expect(await page.isHidden('#camera')).toBe(true);
    } finally {
      await camera.close();
      tab.close();
    }
  });

  it('the demo page\'s "Approve on this device" opens the request in the wallet once it is set up', async () => {
    const demo = watch(await rig.context.newPage());
    await demo.goto(`${rig.service.baseUrl}/`);
    await demo.waitForFunction(() => (document.getElementById('same-device') as HTMLAnchorElement).getAttribute('href')!.startsWith('/wallet/#sign='));
    expect(await demo.textContent('#same-device')).toBe('Approve with the wallet on this device');
    const [approval] = await Promise.all([rig.context.waitForEvent('page'), demo.click('#same-device')]);
    watch(approval);
    await approval.waitForSelector('#request:not([hidden])');
    expect(await approval.textContent('#request-purpose')).toBe('Log in to the tabwire demo');
    await approval.click('#approve');
    await demo.waitForSelector('#result:not([hidden])');
    expect(await demo.textContent('#identity')).toContain('Hopper');
    await approval.close();
    await demo.close();
  });
});
