import { describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { applyForIdentity, approveIdentity, createAccount, makeKey, refreshUntilApproved, useWalletBrowser } from '../helpers/wallet-browser.js';

// The web wallet (docs/wallet.md) in a real Chromium against a real tabwire: its installable shell, a key
// made in the browser, an account, an identity approved by the operator's CLI, all kept across a reload
// and offline. Signing requests with such a wallet: wallet-signing.test.ts.
const rig = useWalletBrowser();
const { openWallet, openTab, qrFor } = rig;
let wallet: Page;
let publicKey: string;
let legalId: string;

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

describe('the web wallet in Chromium', () => {
  it('serves an installable shell: /wallet redirects to /wallet/, with a strict CSP and a manifest with icons', async () => {
    const redirect = await fetch(`${rig.service.baseUrl}/wallet?sign=x`, { redirect: 'manual' });
    expect(redirect.status).toBe(301);
    expect(redirect.headers.get('location')).toBe('/wallet/?sign=x');
    const page = await fetch(`${rig.service.baseUrl}/wallet/`);
    const csp = page.headers.get('content-security-policy')!;
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toMatch(/unsafe-(inline|eval)|https?:/);
    const html = await page.text();
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)/);
    expect(html).toContain('rel="manifest" href="manifest.webmanifest"');
    const manifest = (await (await fetch(`${rig.service.baseUrl}/wallet/manifest.webmanifest`)).json()) as { start_url: string; display: string; icons: Array<{ src: string; sizes: string }> };
    expect(manifest.display).toBe('standalone');
    expect(manifest.icons.map((i) => i.sizes)).toEqual(['192x192', '512x512']);
    for (const icon of manifest.icons) expect((await fetch(`${rig.service.baseUrl}/wallet/${icon.src}`)).headers.get('content-type')).toBe('image/png');
    const worker = await fetch(`${rig.service.baseUrl}/wallet/sw.js`);
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
    publicKey = await makeKey(wallet);
    expect(Buffer.from(publicKey, 'base64')).toHaveLength(32);
    expect(await privateKeyExport(wallet)).toEqual({ extractable: false, algorithm: 'Ed25519', exported: 'refused: InvalidAccessError' });

    await createAccount(wallet);
    expect(await wallet.textContent('#account-name')).toBe('grace');

    legalId = await applyForIdentity(wallet);
    expect(await wallet.textContent('#identity-state')).toBe('Created');
    expect(await wallet.textContent('#identity-attachments')).toContain('badge.png (image/png)');
    const stored = await rig.service.store.identities.get(legalId);
    expect(stored?.clientPubKey).toBe(publicKey);
    expect(stored?.properties).toEqual({ FIRST: 'Grace', LAST: 'Hopper', EMAIL: 'grace@example.org', COUNTRY: 'US' });
    expect(await wallet.evaluate(() => localStorage.getItem('tabwire.wallet'))).toBeNull();
  });

  it('refuses to sign while the identity waits for the operator, and signs once the CLI approved it', async () => {
    const tab = await openTab();
    const { signUrl } = await qrFor(tab, { purpose: 'Too early' });
    const early = await openWallet(`/wallet/#sign=${encodeURIComponent(String(signUrl))}`);
    await early.waitForSelector('#request:not([hidden])');
    expect(await early.textContent('#request-refusal')).toContain('waiting for the operator');
    expect(await early.isDisabled('#approve')).toBe(true);
    await early.close();

    const approved = await approveIdentity(rig.service, legalId);
    expect(approved.status, approved.stderr).toBe(0);
    await refreshUntilApproved(wallet);
    expect(await wallet.evaluate(() => localStorage.getItem('tabwire.wallet'))).toBe('1');
    tab.close();
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
    await rig.context.setOffline(true);
    try {
      const response = await wallet.reload();
      expect(response?.fromServiceWorker()).toBe(true);
      await wallet.waitForSelector('body[data-ready="1"]');
      expect(await wallet.textContent('#key-public')).toBe(publicKey);
      expect(await wallet.textContent('#offline')).toContain('Offline');
      // The decoder, loaded on demand, is in the offline copy too.
      expect(await wallet.evaluate(async () => (await caches.match('/wallet/jsqr.js')) !== undefined)).toBe(true);
    } finally {
      await rig.context.setOffline(false);
    }
    expect(rig.consoleErrors).toEqual([]);
  });
});
