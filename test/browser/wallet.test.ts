import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { PNG } from 'pngjs';
import { launchChromium } from '../helpers/browser.js';
import { runCli } from '../helpers/cli.js';
import { registered } from '../helpers/http.js';
import { assertFreshBuild } from '../helpers/process.js';
import { decodePng } from '../helpers/qr-decode.js';
import { startService, type TestService } from '../helpers/service.js';
import { TestTab } from '../helpers/tab.js';

// The web wallet (docs/wallet.md) in a real Chromium against a real tabwire: a key made in the browser,
// an account, an identity approved by the operator's CLI, and requests opened through the app link.
let service: TestService;
let browser: Browser;
let context: BrowserContext;
let wallet: Page;
let publicKey: string;
let legalId: string;
const consoleErrors: string[] = [];

function watch(page: Page): Page {
  page.on('console', (m) => {
    if (m.type() === 'error') consoleErrors.push(`${page.url()}: ${m.text()}`);
  });
  page.on('pageerror', (e) => consoleErrors.push(`${page.url()}: ${e.message}`));
  return page;
}

async function openWallet(path = '/wallet/'): Promise<Page> {
  const page = watch(await context.newPage());
  await page.goto(`${service.baseUrl}${path}`);
  await page.waitForSelector('body[data-ready="1"]');
  return page;
}

/** A QR request for a tab, as a page on the service's own origin makes it. */
async function qrFor(tab: TestTab, body: Record<string, unknown>): Promise<Record<string, unknown>> {
  const response = await fetch(`${service.baseUrl}/QuickLogin`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', cookie: tab.cookie, origin: service.baseUrl },
    body: JSON.stringify({ serviceId: '', tab: tab.tabId, mode: 'text', ...body }),
  });
  expect(response.status).toBe(200);
  return (await response.json()) as Record<string, unknown>;
}

/** Reads the wallet's stored key pair in the page and tries to export its private half. */
const privateKeyExport = (page: Page) =>
  page.evaluate(async () => {
    const pair = await new Promise<CryptoKeyPair>((resolve, reject) => {
      const open = indexedDB.open('tabwire-wallet');
      open.onerror = () => reject(open.error);
      open.onsuccess = () => {
        const get = open.result.transaction('wallet').objectStore('wallet').get('key');
        get.onsuccess = () => resolve(get.result as CryptoKeyPair);
        get.onerror = () => reject(get.error);
      };
    });
    let exported = 'exported';
    try {
      await crypto.subtle.exportKey('pkcs8', pair.privateKey);
    } catch (err) {
      exported = `refused: ${(err as Error).name}`;
    }
    return { extractable: pair.privateKey.extractable, algorithm: pair.privateKey.algorithm.name, exported };
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

beforeAll(async () => {
  // The wallet is served from dist/wallet/ and the operator approves with the built CLI: both must be current.
  assertFreshBuild();
  service = await startService({ openRegistration: true });
  browser = await launchChromium();
  // A phone-sized screen: everything below must work at 390 px.
  context = await browser.newContext({ viewport: { width: 390, height: 844 } });
});
afterAll(async () => {
  await browser?.close();
  await service?.close();
});

describe('the web wallet in Chromium', () => {
  it('serves an installable shell: /wallet redirects to /wallet/, with a strict CSP and a manifest with icons', async () => {
    const redirect = await fetch(`${service.baseUrl}/wallet?sign=x`, { redirect: 'manual' });
    expect(redirect.status).toBe(301);
    expect(redirect.headers.get('location')).toBe('/wallet/?sign=x');
    const page = await fetch(`${service.baseUrl}/wallet/`);
    const csp = page.headers.get('content-security-policy')!;
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toMatch(/unsafe-(inline|eval)|https?:/);
    const html = await page.text();
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)/);
    expect(html).toContain('rel="manifest" href="manifest.webmanifest"');
    const manifest = (await (await fetch(`${service.baseUrl}/wallet/manifest.webmanifest`)).json()) as { start_url: string; display: string; icons: Array<{ src: string; sizes: string }> };
    expect(manifest.display).toBe('standalone');
    expect(manifest.icons.map((i) => i.sizes)).toEqual(['192x192', '512x512']);
    for (const icon of manifest.icons) expect((await fetch(`${service.baseUrl}/wallet/${icon.src}`)).headers.get('content-type')).toBe('image/png');
    const worker = await fetch(`${service.baseUrl}/wallet/sw.js`);
    expect(worker.status).toBe(200);
    expect(worker.headers.get('content-type')).toContain('text/javascript');
  });

  it('makes a non-extractable Ed25519 key, signs in with a new account and applies for an identity', async () => {
    wallet = await openWallet('/wallet');
    expect(new URL(wallet.url()).pathname).toBe('/wallet/');
    // Screen readers: every control has a label, and the page says its language.
    const unlabelled = await wallet.evaluate(() =>
      [...document.querySelectorAll('input')].filter((i) => (i.labels?.length ?? 0) === 0 && !i.getAttribute('aria-label')).map((i) => i.id),
    );
    expect(unlabelled).toEqual([]);
    expect(await wallet.getAttribute('html', 'lang')).toBe('en');
    await wallet.click('#create-key');
    await wallet.waitForSelector('#key-info:not([hidden])');
    publicKey = (await wallet.textContent('#key-public'))!;
    expect(Buffer.from(publicKey, 'base64')).toHaveLength(32);
    expect(await privateKeyExport(wallet)).toEqual({ extractable: false, algorithm: 'Ed25519', exported: 'refused: InvalidAccessError' });

    await wallet.fill('#user-name', 'grace');
    await wallet.fill('#password', 'correct horse battery');
    await wallet.click('#create-account');
    await wallet.waitForSelector('#account-info:not([hidden])');
    expect(await wallet.textContent('#account-name')).toBe('grace');

    await wallet.fill('#prop-first', 'Grace');
    await wallet.fill('#prop-last', 'Hopper');
    await wallet.fill('#prop-email', 'grace@example.org');
    await wallet.fill('#prop-country', 'us');
    await wallet.setInputFiles('#attachment', { name: 'badge.png', mimeType: 'image/png', buffer: Buffer.from('iVBORw0KGgo=', 'base64') });
    await wallet.click('#apply');
    await wallet.waitForSelector('#identity-info:not([hidden])');
    expect(await wallet.textContent('#identity-state')).toBe('Created');
    expect(await wallet.textContent('#identity-attachments')).toContain('badge.png (image/png)');
    legalId = (await wallet.textContent('#identity-id'))!;
    const stored = await service.store.identities.get(legalId);
    expect(stored?.clientPubKey).toBe(publicKey);
    expect(stored?.properties).toEqual({ FIRST: 'Grace', LAST: 'Hopper', EMAIL: 'grace@example.org', COUNTRY: 'US' });
    expect(await wallet.evaluate(() => localStorage.getItem('tabwire.wallet'))).toBeNull();
  });

  it('refuses to sign while the identity waits for the operator, and signs once the CLI approved it', async () => {
    const tab = await TestTab.open(service.wsUrl);
    await registered(service, tab.tabId);
    const { signUrl } = await qrFor(tab, { purpose: 'Too early' });
    const early = await openWallet(`/wallet/#sign=${encodeURIComponent(String(signUrl))}`);
    await early.waitForSelector('#request:not([hidden])');
    expect(await early.textContent('#request-refusal')).toContain('waiting for the operator');
    expect(await early.isDisabled('#approve')).toBe(true);
    await early.close();

    const approved = await runCli(['identity', 'approve', legalId], { env: { TABWIRE_SQLITE_FILE: join(service.dir, 'tabwire.sqlite') } });
    expect(approved.status, approved.stderr).toBe(0);
    await wallet.click('#refresh');
    await wallet.waitForFunction(() => document.getElementById('identity-state')!.textContent === 'Approved');
    expect(await wallet.evaluate(() => localStorage.getItem('tabwire.wallet'))).toBe('1');
    tab.close();
  });

  it('an app link shows who asks, the purpose, the disclosed properties and the expiry; Approve → the waiting tab gets SignatureReceived with the wallet key', async () => {
    const tab = await TestTab.open(service.wsUrl);
    await registered(service, tab.tabId);
    const { signUrl } = await qrFor(tab, { purpose: 'Log in to the library', propertyFilter: 'FIRST, COUNTRY' });
    const page = await openWallet(`/wallet/#sign=${encodeURIComponent(String(signUrl))}`);
    await page.waitForSelector('#request:not([hidden])');
    // The address is cleaned: a reload does not open the request again.
    expect(new URL(page.url()).hash).toBe('');
    expect(await page.textContent('#request-origin')).toBe(service.baseUrl);
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
    const tab = await TestTab.open(service.wsUrl);
    await registered(service, tab.tabId);
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
    const tab = await TestTab.open(service.wsUrl);
    await registered(service, tab.tabId);
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
    const port = new URL(service.baseUrl).port;
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
    const tab = await TestTab.open(service.wsUrl);
    await registered(service, tab.tabId);
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
    const tab = await TestTab.open(service.wsUrl);
    await registered(service, tab.tabId);
    const { signUrl } = await qrFor(tab, { purpose: 'Native scan' });
    const native = await browser.newContext({ viewport: { width: 390, height: 844 } });
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
    await page.goto(`${service.baseUrl}/wallet/`);
    await page.waitForSelector('body[data-decoder]');
    expect(await page.getAttribute('body', 'data-decoder')).toBe('BarcodeDetector');
    const icon = Buffer.from(await (await fetch(`${service.baseUrl}/wallet/icon-192.png`)).arrayBuffer());
    await page.setInputFiles('#qr-file', { name: 'photo.png', mimeType: 'image/png', buffer: icon });
    await page.waitForSelector('#request:not([hidden])');
    expect(await page.textContent('#request-purpose')).toBe('Native scan');
    // This browser has no wallet set up: it shows the request and says why it cannot sign.
    expect(await page.textContent('#request-refusal')).toBe('Make a key first (step 1).');
    await native.close();
    tab.close();
  });

  it('scans a QR code with the camera (a fake camera that films the service PNG)', async () => {
    const tab = await TestTab.open(service.wsUrl);
    await registered(service, tab.tabId);
    const code = await qrFor(tab, { mode: 'image', purpose: 'Camera login' });
    const png = PNG.sync.read(Buffer.from(await (await fetch(String(code.src))).arrayBuffer()));
    const video = join(service.dir, 'qr.y4m');
    writeFileSync(video, y4mOf(png, 640, 480));
    const camera = await chromium.launch({
      executablePath: '/usr/bin/chromium',
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--use-fake-device-for-media-stream', '--use-fake-ui-for-media-stream', `--use-file-for-fake-video-capture=${video}`],
    });
    try {
      const phone = await camera.newContext({ viewport: { width: 390, height: 844 }, permissions: ['camera'] });
      const page = watch(await phone.newPage());
      await page.goto(`${service.baseUrl}/wallet/`);
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
    const demo = watch(await context.newPage());
    await demo.goto(`${service.baseUrl}/`);
    await demo.waitForFunction(() => (document.getElementById('same-device') as HTMLAnchorElement).getAttribute('href')!.startsWith('/wallet/#sign='));
    expect(await demo.textContent('#same-device')).toBe('Approve with the wallet on this device');
    const [approval] = await Promise.all([context.waitForEvent('page'), demo.click('#same-device')]);
    watch(approval);
    await approval.waitForSelector('#request:not([hidden])');
    expect(await approval.textContent('#request-purpose')).toBe('Log in to the tabwire demo');
    await approval.click('#approve');
    await demo.waitForSelector('#result:not([hidden])');
    expect(await demo.textContent('#identity')).toContain('Hopper');
    await approval.close();
    await demo.close();
  });

  it('the key survives a reload and stays non-extractable; the service worker serves the wallet offline', async () => {
    await wallet.reload();
    await wallet.waitForSelector('body[data-ready="1"]');
    expect(await wallet.textContent('#key-public')).toBe(publicKey);
    expect(await wallet.textContent('#identity-state')).toBe('Approved');
    expect((await privateKeyExport(wallet)).exported).toBe('refused: InvalidAccessError');

    await wallet.evaluate(async () => {
      await navigator.serviceWorker.ready;
    });
    await context.setOffline(true);
    try {
      const response = await wallet.reload();
      expect(response?.fromServiceWorker()).toBe(true);
      await wallet.waitForSelector('body[data-ready="1"]');
      expect(await wallet.textContent('#key-public')).toBe(publicKey);
      expect(await wallet.textContent('#offline')).toContain('Offline');
      // The decoder, loaded on demand, is in the offline copy too.
      expect(await wallet.evaluate(async () => (await caches.match('/wallet/jsqr.js')) !== undefined)).toBe(true);
    } finally {
      await context.setOffline(false);
    }
    expect(consoleErrors).toEqual([]);
  });
});
