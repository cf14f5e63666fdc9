import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeKeyFile } from '../../src/identity/key-file.js';
import { ACR } from '../../src/oidc/provider.js';
import { startAuthJsRp } from '../helpers/authjs-rp.js';
import { launchChromium } from '../helpers/browser.js';
import { runCli } from '../helpers/cli.js';
import { addClient } from '../helpers/oidc-flow.js';
import { startOpenidClientRp } from '../helpers/oidc-rp.js';
import { makeIdentity, startService } from '../helpers/service.js';
import { approvedWallet, WalletBrowser } from '../helpers/wallet-browser.js';

// The OpenID Provider's login (docs/oidc.md) as a person takes it: a relying party (openid-client or Auth.js)
// sends Chromium to the provider's login page, the person approves in a signing app (the built CLI, or the web
// wallet on the same device), and the page alone finishes the login: the browser lands back on the relying
// party, which redeemed the code and holds the identity's claims for the scopes it asked for.

const rig = new WalletBrowser();
let keyDir: string;
let keyFile: string;
let ada: Awaited<ReturnType<typeof makeIdentity>>;
const issuer = () => `${rig.service.publicBaseUrl}/oidc`;

/** What `openid profile email` gives for Ada: her names and e-mail, nothing of her address or other properties. */
const adaClaims = () => ({ sub: ada.identity.id, given_name: 'Ada', family_name: 'Lovelace', name: 'Ada Lovelace', email: 'ada@example.org' });
/** The login page's words for the claims of `openid profile email` (public/oidc-login.js). */
const PROFILE_EMAIL_LABELS = 'an identifier for you, your name, first name, middle name, last name, birth date, gender, e-mail address';

beforeAll(async () => {
  // The real clock: the page's codes and the provider's interactions expire by it.
  rig.service = await startService({ logLevel: 'error', openRegistration: true }, { realClock: true });
  rig.browser = await launchChromium();
  ada = await makeIdentity(rig.service, { FIRST: 'Ada', LAST: 'Lovelace', EMAIL: 'ada@example.org', PNR: '18151210-0001', COUNTRY: 'GB' });
  // Ada's key file, as `tabwire identity create --key-out` writes it, for `tabwire sign --key`.
  keyDir = mkdtempSync(join(tmpdir(), 'tabwire-oidc-key-'));
  keyFile = join(keyDir, 'ada.key');
  writeKeyFile(keyFile, ada.identity.id, ada.privateKeyPem);
});
afterAll(async () => {
  await rig.browser?.close();
  await rig.service?.close();
  if (keyDir) rmSync(keyDir, { recursive: true, force: true });
});

/** A fresh browser profile whose pages' console errors and uncaught exceptions are collected. */
async function newContext(o: { viewport?: { width: number; height: number } } = {}): Promise<BrowserContext> {
  const context = await rig.browser.newContext(o.viewport ? { viewport: o.viewport } : {});
  await context.grantPermissions(['local-network-access'], { origin: rig.service.baseUrl }).catch(() => undefined);
  context.on('page', rig.watch);
  return context;
}

/** A client registered for the relying party's redirect URI, with its id and secret chosen before the RP starts. */
function clientCredentials() {
  return { clientId: `shop-${randomBytes(6).toString('base64url')}`, clientSecret: randomBytes(32).toString('base64url') };
}

/**
 * Opens the relying party's login URL and waits until the provider's login page shows a loaded QR code; checks
 * what the page tells the person. Answers the page and the signUrl its QR link holds now.
 */
async function openLoginPage(context: BrowserContext, loginUrl: string, expected: { clientName: string; site: string; claims: string }): Promise<{ page: Page; signUrl: string }> {
  const page = await context.newPage();
  await page.goto(loginUrl);
  expect(new URL(page.url()).pathname).toMatch(/^\/oidc\/interaction\/[A-Za-z0-9_-]+$/);
  // The image is shown once it has loaded (the page unhides it on `load`), and it decoded to real pixels.
  await page.waitForSelector('#qr:not([hidden])');
  expect(await page.$eval('#qr', (img) => (img as HTMLImageElement).complete && (img as HTMLImageElement).naturalWidth > 0)).toBe(true);
  const signUrl = (await page.getAttribute('#qr-link', 'href'))!;
  expect(signUrl).toMatch(new RegExp(`^${rig.service.publicBaseUrl}/QuickLogin/Sign/[A-Za-z0-9_-]+$`));
  expect(await page.textContent('#title')).toBe(`Log in to ${expected.clientName}`);
  expect(await page.textContent('#site')).toBe(expected.site);
  expect(await page.textContent('#claims')).toBe(expected.claims);
  expect(await page.textContent('#status')).toBe('Waiting for your approval…');
  return { page, signUrl };
}

/** `tabwire sign <signUrl> --key <Ada's key file> --yes` (or `--reject --yes`), the built CLI as a signer runs it. */
async function cliSign(signUrl: string, decision: 'approve' | 'reject' = 'approve') {
  const run = await runCli(['sign', signUrl, '--key', keyFile, '--yes', ...(decision === 'reject' ? ['--reject'] : [])]);
  expect({ status: run.status, stderr: run.stderr }).toEqual({ status: 0, stderr: '' });
  return run;
}

/** The ID token the RP received, verified here against the provider's published JWKS; answers its header alg and claims. */
async function verifiedIdToken(idToken: unknown, audience: string) {
  const jwks = createRemoteJWKSet(new URL(`${rig.service.baseUrl}/oidc/jwks`));
  const { payload, protectedHeader } = await jwtVerify(String(idToken), jwks, { issuer: issuer(), audience });
  return { alg: protectedHeader.alg, payload };
}

describe('OpenID Connect login in Chromium', () => {
  it.each([['EdDSA'], ['ES256']] as const)(
    'openid-client RP, %s ID tokens: login page with the QR → `tabwire sign` approves → the page finishes by itself → the RP holds the scopes\' claims',
    async (alg) => {
      const { clientId, clientSecret } = clientCredentials();
      const rp = await startOpenidClientRp({ issuer: issuer(), clientId, clientSecret, idTokenSignedResponseAlg: alg, scope: 'openid profile email' });
      const context = await newContext();
      try {
        await addClient(rig.service.store, { clientId, clientSecret, name: 'The Shop', idTokenAlg: alg, redirectUris: [rp.redirectUri] });
        const { page, signUrl } = await openLoginPage(context, rp.loginUrl(), { clientName: 'The Shop', site: rp.url, claims: PROFILE_EMAIL_LABELS });
        // Nothing reached the RP before the approval.
        expect([rp.logins.length, rp.failures.length]).toEqual([0, 0]);

        const signed = await cliSign(signUrl);
        // The signing app was shown the relying party as the requester, not the provider's own page.
        expect(signed.stdout).toContain(`${rp.url} asks: "Log in to The Shop"`);
        expect(signed.stdout.trim().split('\n').at(-1)).toBe('approved');

        // No test action from here: the page hears the result, completes, and the browser follows to the RP.
        await page.waitForURL((url) => url.href.startsWith(`${rp.redirectUri}?`));
        const login = await rp.nextLogin();
        const shown = JSON.parse((await page.textContent('#claims'))!) as { idToken: Record<string, unknown> };
        expect(shown.idToken.sub).toBe(ada.identity.id);

        const { alg: signedWith, payload } = await verifiedIdToken(login.tokens.id_token, clientId);
        expect(signedWith).toBe(alg);
        expect(decodeProtectedHeader(String(login.tokens.id_token)).kid).toEqual(expect.any(String));
        expect(payload).toMatchObject({ ...adaClaims(), acr: ACR, amr: ['swk', 'user'] });
        expect(login.idToken).toMatchObject(adaClaims());
        // Not asked for: the address scope's country, the other properties (PNR).
        for (const claim of ['address', 'properties', 'phone_number']) expect(payload).not.toHaveProperty(claim);
        expect(login.userinfo).toEqual(adaClaims());
      } finally {
        await context.close();
        await rp.close();
      }
    },
  );

  it('Auth.js RP: the same login by `tabwire sign` ends in an Auth.js session with the scopes\' claims', async () => {
    const { clientId, clientSecret } = clientCredentials();
    const rp = await startAuthJsRp({ issuer: issuer(), clientId, clientSecret, idTokenSignedResponseAlg: 'EdDSA', scope: 'openid profile email' });
    const context = await newContext();
    try {
      await addClient(rig.service.store, { clientId, clientSecret, name: 'The Bookshop', redirectUris: [rp.redirectUri] });
      const { page, signUrl } = await openLoginPage(context, rp.loginUrl(), { clientName: 'The Bookshop', site: rp.url, claims: PROFILE_EMAIL_LABELS });
      expect(rp.logins).toEqual([]);
      await cliSign(signUrl);
      // Auth.js redeems the code on its callback and sends the browser on to /me, which shows the session.
      await page.waitForURL(`${rp.url}/me`);
      const login = await rp.nextLogin();
      const session = JSON.parse((await page.textContent('#claims'))!) as Record<string, unknown>;
      expect(session).toMatchObject(adaClaims());
      expect(session).not.toHaveProperty('address');
      expect(session).not.toHaveProperty('properties');
      const { payload } = await verifiedIdToken(login.tokens.id_token, clientId);
      expect(payload).toMatchObject({ ...adaClaims(), acr: ACR, amr: ['swk', 'user'] });
      // The session cookie is Auth.js's own: its session endpoint answers the same claims to this browser.
      const answer = await page.evaluate(async () => (await fetch('/auth/session')).json());
      expect(answer).toMatchObject({ claims: adaClaims() });
    } finally {
      await context.close();
      await rp.close();
    }
  });

  it('the web wallet on the same device approves: "Approve on this device" opens it, and the login page lands on the RP', async () => {
    // A phone: the person holds an approved identity in the web wallet of this browser (Grace Hopper).
    rig.context = await newContext({ viewport: { width: 390, height: 844 } });
    const { clientId, clientSecret } = clientCredentials();
    const rp = await startOpenidClientRp({ issuer: issuer(), clientId, clientSecret, idTokenSignedResponseAlg: 'EdDSA', scope: 'openid profile email' });
    try {
      const { wallet, legalId } = await approvedWallet(rig);
      await wallet.close();
      await addClient(rig.service.store, { clientId, clientSecret, name: 'The Shop', redirectUris: [rp.redirectUri] });
      const { page } = await openLoginPage(rig.context, rp.loginUrl(), { clientName: 'The Shop', site: rp.url, claims: PROFILE_EMAIL_LABELS });
      // The wallet on this origin holds an identity, so the same-device link opens it with the request.
      expect(await page.getAttribute('#same-device', 'href')).toMatch(/^\/wallet\/#sign=/);
      const [approval] = await Promise.all([rig.context.waitForEvent('page'), page.click('#same-device')]);
      await approval.waitForSelector('#request:not([hidden])');
      expect(await approval.textContent('#request-origin')).toBe(rp.url);
      expect(await approval.textContent('#request-purpose')).toBe('Log in to The Shop');
      // The scopes' properties only: her country (address scope) is not disclosed.
      expect(await approval.locator('#request-properties li').allTextContents()).toEqual(['First name: Grace', 'Last name: Hopper', 'E-mail: grace@example.org']);
      expect(rp.logins).toEqual([]);
      await approval.click('#approve');
      await approval.waitForFunction(() => document.getElementById('request-outcome')!.textContent!.startsWith('Approved'));

      await page.waitForURL((url) => url.href.startsWith(`${rp.redirectUri}?`));
      const login = await rp.nextLogin();
      const grace = { sub: legalId, given_name: 'Grace', family_name: 'Hopper', name: 'Grace Hopper', email: 'grace@example.org' };
      const { payload } = await verifiedIdToken(login.tokens.id_token, clientId);
      expect(payload).toMatchObject({ ...grace, acr: ACR });
      expect(payload).not.toHaveProperty('address');
      expect(login.userinfo).toEqual(grace);
    } finally {
      await rig.context.close();
      await rp.close();
    }
  });

  it('the same browser again: the same RP signs in at once within the provider\'s session; prompt=login and another RP each need a new approval', async () => {
    const shop = clientCredentials();
    const books = clientCredentials();
    const rpShop = await startOpenidClientRp({ issuer: issuer(), ...shop, idTokenSignedResponseAlg: 'EdDSA', scope: 'openid profile email' });
    const rpBooks = await startOpenidClientRp({ issuer: issuer(), ...books, idTokenSignedResponseAlg: 'EdDSA', scope: 'openid email' });
    const context = await newContext();
    try {
      await addClient(rig.service.store, { ...shop, name: 'The Shop', redirectUris: [rpShop.redirectUri] });
      await addClient(rig.service.store, { ...books, name: 'The Bookshop', redirectUris: [rpBooks.redirectUri] });
      const first = await openLoginPage(context, rpShop.loginUrl(), { clientName: 'The Shop', site: rpShop.url, claims: PROFILE_EMAIL_LABELS });
      await cliSign(first.signUrl);
      await first.page.waitForURL((url) => url.href.startsWith(`${rpShop.redirectUri}?`));
      const firstLogin = await rpShop.nextLogin();
      await first.page.close();

      // The provider's session (oidcSessionSeconds) and the shop's grant: back at the RP without a login page.
      const again = await context.newPage();
      await again.goto(rpShop.loginUrl());
      expect(again.url().startsWith(`${rpShop.redirectUri}?`)).toBe(true);
      const silent = await rpShop.nextLogin();
      expect(silent.idToken).toMatchObject({ ...adaClaims(), auth_time: firstLogin.idToken.auth_time });
      await again.close();

      // prompt=login (OpenID Connect Core §3.1.2.1): the person approves again, and auth_time is the new approval's.
      const forced = await openLoginPage(context, rpShop.loginUrl({ prompt: 'login' }), { clientName: 'The Shop', site: rpShop.url, claims: PROFILE_EMAIL_LABELS });
      expect(rpShop.logins).toHaveLength(2);
      await cliSign(forced.signUrl);
      await forced.page.waitForURL((url) => url.href.startsWith(`${rpShop.redirectUri}?`));
      const reapproved = await rpShop.nextLogin();
      expect(reapproved.idToken.sub).toBe(ada.identity.id);
      expect(Number(reapproved.idToken.auth_time)).toBeGreaterThanOrEqual(Number(firstLogin.idToken.auth_time));
      await forced.page.close();

      // Another site was never approved: its own login page, with its own claims, and only those in its tokens.
      const other = await openLoginPage(context, rpBooks.loginUrl(), { clientName: 'The Bookshop', site: rpBooks.url, claims: 'an identifier for you, e-mail address' });
      expect(rpBooks.logins).toEqual([]);
      await cliSign(other.signUrl);
      await other.page.waitForURL((url) => url.href.startsWith(`${rpBooks.redirectUri}?`));
      const booksLogin = await rpBooks.nextLogin();
      expect(booksLogin.userinfo).toEqual({ sub: ada.identity.id, email: 'ada@example.org' });
      expect(booksLogin.idToken).not.toHaveProperty('given_name');
    } finally {
      await context.close();
      await rpShop.close();
      await rpBooks.close();
    }
  });

  it('a rejection in the signing app ends at the RP with access_denied, and no one is signed in; the login page, reloaded or gone back to, says the login has ended', async () => {
    const { clientId, clientSecret } = clientCredentials();
    const rp = await startOpenidClientRp({ issuer: issuer(), clientId, clientSecret, idTokenSignedResponseAlg: 'EdDSA', scope: 'openid profile email' });
    const context = await newContext();
    try {
      await addClient(rig.service.store, { clientId, clientSecret, name: 'The Shop', redirectUris: [rp.redirectUri] });
      const { page, signUrl } = await openLoginPage(context, rp.loginUrl(), { clientName: 'The Shop', site: rp.url, claims: PROFILE_EMAIL_LABELS });
      const signed = await cliSign(signUrl, 'reject');
      expect(signed.stdout.trim().split('\n').at(-1)).toBe('rejected');
      await page.waitForURL((url) => url.href.startsWith(`${rp.redirectUri}?`));
      expect(new URL(page.url()).searchParams.get('error')).toBe('access_denied');
      const failure = await rp.nextFailure();
      expect(failure.error).toBe('access_denied');
      expect(rp.logins).toEqual([]);
      expect(JSON.parse((await page.textContent('#error'))!)).toMatchObject({ error: 'access_denied' });

      // Back to the login page, or reloading it: the login has ended, and the page says so in words.
      const before = rig.consoleErrors.length;
      await page.goBack();
      await page.waitForFunction(() => document.getElementById('title')?.textContent === 'This login has ended');
      expect(await page.isHidden('#waiting')).toBe(true);
      expect(await page.textContent('#lead')).toContain('go back to the site and start again');
      const reloaded = await page.reload();
      expect(reloaded?.status()).toBe(404);
      await page.waitForFunction(() => document.getElementById('title')?.textContent === 'This login has ended');
      expect(await page.textContent('#lead')).toContain('go back to the site and start again');
      // The page's own request for what to show was refused (404): the only errors its console shows.
      expect(rig.consoleErrors.splice(before).every((error) => error.endsWith('status of 404 (Not Found)'))).toBe(true);
    } finally {
      await context.close();
      await rp.close();
    }
  });
});

// No page of the service (the login page, the wallet) logged an error or threw; the relying parties' pages
// have no favicon, and their error page answers 400.
afterAll(() => {
  expect(rig.consoleErrors.filter((error) => error.startsWith(rig.service.baseUrl))).toEqual([]);
});
