/**
 * The web wallet's browser tests (test/browser/wallet-*.test.ts): a real tabwire with open registration,
 * Debian's Chromium at phone size, and the steps that set a wallet up through its page as a person does.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, expect } from 'vitest';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { launchChromium } from './browser.js';
import { runCli } from './cli.js';
import { registered } from './http.js';
import { assertFreshBuild } from './process.js';
import { startService, type TestService } from './service.js';
import { TestTab } from './tab.js';

/**
 * One test file's service, browser and phone-sized context (set once beforeAll has run), and the console
 * errors of every page it watched. The methods are arrow properties so a test file may destructure them.
 */
export class WalletBrowser {
  service!: TestService;
  browser!: Browser;
  context!: BrowserContext;
  readonly consoleErrors: string[] = [];

  /** Collects the page's console errors and uncaught exceptions into consoleErrors. */
  readonly watch = (page: Page): Page => {
    page.on('console', (m) => {
      if (m.type() === 'error') this.consoleErrors.push(`${page.url()}: ${m.text()}`);
    });
    page.on('pageerror', (e) => this.consoleErrors.push(`${page.url()}: ${e.message}`));
    return page;
  };

  /** Opens the wallet at `path` in the shared context and waits until its start-up has finished. */
  readonly openWallet = async (path = '/wallet/'): Promise<Page> => {
    const page = this.watch(await this.context.newPage());
    await page.goto(`${this.service.baseUrl}${path}`);
    await page.waitForSelector('body[data-ready="1"]');
    return page;
  };

  /** A tab on the service whose Register the service has processed, as a login page's is when it asks for a code. */
  readonly openTab = async (): Promise<TestTab> => {
    const tab = await TestTab.open(this.service.wsUrl);
    await registered(this.service, tab.tabId);
    return tab;
  };

  /** A QR request for a tab, as a page on the service's own origin makes it. */
  readonly qrFor = async (tab: TestTab, body: Record<string, unknown>): Promise<Record<string, unknown>> => {
    const response = await fetch(`${this.service.baseUrl}/QuickLogin`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', cookie: tab.cookie, origin: this.service.baseUrl },
      body: JSON.stringify({ serviceId: '', tab: tab.tabId, mode: 'text', ...body }),
    });
    expect(response.status).toBe(200);
    return (await response.json()) as Record<string, unknown>;
  };
}

/** A WalletBrowser started before the calling file's tests and closed after them. */
export function useWalletBrowser(options: { openRegistration?: boolean } = {}): WalletBrowser {
  const rig = new WalletBrowser();
  beforeAll(async () => {
    // The wallet is served from dist/wallet/ and the operator approves with the built CLI: both must be current.
    assertFreshBuild();
    rig.service = await startService({ openRegistration: options.openRegistration ?? true });
    rig.browser = await launchChromium();
    // A phone-sized screen: everything below must work at 390 px.
    rig.context = await rig.browser.newContext({ viewport: { width: 390, height: 844 } });
  });
  afterAll(async () => {
    await rig.browser?.close();
    await rig.service?.close();
  });
  return rig;
}

/** Makes the wallet's key; returns its public half (base64). */
export async function makeKey(wallet: Page): Promise<string> {
  await wallet.click('#create-key');
  await wallet.waitForSelector('#key-info:not([hidden])');
  return (await wallet.textContent('#key-public'))!;
}

/** Creates the account "grace" and signs in with it. */
export async function createAccount(wallet: Page): Promise<void> {
  await wallet.fill('#user-name', 'grace');
  await wallet.fill('#password', 'correct horse battery');
  await wallet.click('#create-account');
  await wallet.waitForSelector('#account-info:not([hidden])');
}

/** Applies for Grace Hopper's identity (US, with a badge attached); returns its id, the legal id. */
export async function applyForIdentity(wallet: Page): Promise<string> {
  await wallet.fill('#prop-first', 'Grace');
  await wallet.fill('#prop-last', 'Hopper');
  await wallet.fill('#prop-email', 'grace@example.org');
  await wallet.fill('#prop-country', 'us');
  await wallet.setInputFiles('#attachment', { name: 'badge.png', mimeType: 'image/png', buffer: Buffer.from('iVBORw0KGgo=', 'base64') });
  await wallet.click('#apply');
  await wallet.waitForSelector('#identity-info:not([hidden])');
  return (await wallet.textContent('#identity-id'))!;
}

/** The operator approves the identity with the built CLI, on the service's own database file. */
export function approveIdentity(service: TestService, legalId: string): ReturnType<typeof runCli> {
  return runCli(['identity', 'approve', legalId], { env: { TABWIRE_SQLITE_FILE: join(service.dir, 'tabwire.sqlite') } });
}

/** Has the wallet check its identity again, and waits until it shows Approved. */
export async function refreshUntilApproved(wallet: Page): Promise<void> {
  await wallet.click('#refresh');
  await wallet.waitForFunction(() => document.getElementById('identity-state')!.textContent === 'Approved');
}

/** A wallet that can sign: a key, Grace's account and her identity, approved by the operator. */
export async function approvedWallet(rig: WalletBrowser): Promise<{ wallet: Page; publicKey: string; legalId: string }> {
  const wallet = await rig.openWallet();
  const publicKey = await makeKey(wallet);
  await createAccount(wallet);
  const legalId = await applyForIdentity(wallet);
  const approved = await approveIdentity(rig.service, legalId);
  if (approved.status !== 0) throw new Error(`tabwire identity approve ${legalId} exited with ${approved.status}: ${approved.stderr}`);
  await refreshUntilApproved(wallet);
  return { wallet, publicKey, legalId };
}
