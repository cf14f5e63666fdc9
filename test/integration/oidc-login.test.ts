import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { privateKeyFromPem } from '../../src/identity/keys.js';
import { ACR } from '../../src/oidc/provider.js';
import { addClient, approve, authorize, complete, CookieJar, exchange, followToRp, interactionUid, loginPageCode, pkce } from '../helpers/oidc-flow.js';
import { makeIdentity, startService, type TestService } from '../helpers/service.js';

// The OpenID Provider's authorization code flow on one node, step by step as a browser and a relying party
// take it (docs/oidc.md), with the refusals RFC 6749 §4.1.2.1 and §5.2 specify.

let service: TestService;
let ada: Awaited<ReturnType<typeof makeIdentity>>;

beforeAll(async () => {
  service = await startService({ logLevel: 'error' }, { realClock: true });
  ada = await makeIdentity(service, { FIRST: 'Ada', LAST: 'Lovelace', EMAIL: 'ada@example.org', PNR: '18151210-0001', COUNTRY: 'GB' });
});
afterAll(async () => {
  await service?.close();
});

/** A whole login up to the code at the RP's redirect URI. */
async function loginToCode(o: { scope?: string; challenge?: string; client: Awaited<ReturnType<typeof addClient>>; extra?: Record<string, string> }) {
  const jar = new CookieJar();
  const state = 'st-' + Math.random().toString(36).slice(2);
  const nonce = 'no-' + Math.random().toString(36).slice(2);
  const started = await authorize(service.baseUrl, jar, { client: o.client, state, nonce, ...(o.scope ? { scope: o.scope } : {}), ...(o.challenge ? { challenge: o.challenge } : {}), ...(o.extra ? { extra: o.extra } : {}) });
  expect(started.status).toBe(303);
  const uid = interactionUid(started.headers.get('location')!);
  const { tab, signUrl, status, body } = await loginPageCode(service.baseUrl, service.wsUrl, jar, uid, service.publicBaseUrl);
  expect({ status, body }).toMatchObject({ status: 200, body: { signUrl: expect.any(String) } });
  try {
    const { info, answer } = await approve(signUrl, ada.identity.id, privateKeyFromPem(ada.privateKeyPem));
    expect(answer.state).toBe('approved');
    await tab.next('SignatureReceived');
    const done = await complete(service.baseUrl, jar, uid, tab.tabId, service.publicBaseUrl);
    expect(done.status).toBe(200);
    const back = await followToRp(service.baseUrl, jar, done.body.redirectTo!);
    return { back, state, nonce, info, jar, uid, tab };
  } finally {
    tab.ws.close();
  }
}

describe('OpenID Connect login by QR on one node', () => {
  it('authorize → QR page → approval → code → tokens: the ID token verifies against the JWKS and carries the scopes\' claims only', async () => {
    const client = await addClient(service.store, { redirectUris: ['https://shop.example/cb'], name: 'The Shop' });
    const { verifier, challenge } = pkce();
    const { back, state, nonce, info } = await loginToCode({ client, challenge, scope: 'openid profile email' });
    // The signing app saw the relying party, not the provider's own page, and exactly the scopes' properties.
    expect(info.origin).toBe('https://shop.example');
    expect(info.purpose).toBe('Log in to The Shop');
    expect(info.propertyFilter!.split(',').sort()).toEqual(['BDAY', 'BMONTH', 'BYEAR', 'EMAIL', 'FIRST', 'GENDER', 'LAST', 'MIDDLE']);
    expect(`${back.origin}${back.pathname}`).toBe('https://shop.example/cb');
    expect(back.searchParams.get('state')).toBe(state);
    const code = back.searchParams.get('code')!;
    const tokens = await exchange(service.baseUrl, client, { code, redirect_uri: 'https://shop.example/cb', code_verifier: verifier });
    expect(tokens.status).toBe(200);
    const idToken = String(tokens.body.id_token);
    expect(decodeProtectedHeader(idToken).alg).toBe('EdDSA');
    const jwks = createRemoteJWKSet(new URL(`${service.baseUrl}/oidc/jwks`));
    const { payload } = await jwtVerify(idToken, jwks, { issuer: `${service.publicBaseUrl}/oidc`, audience: client.clientId });
    expect(payload).toMatchObject({ sub: ada.identity.id, nonce, given_name: 'Ada', family_name: 'Lovelace', name: 'Ada Lovelace', email: 'ada@example.org', acr: ACR, amr: ['swk', 'user'] });
    // Not asked for: neither the address scope's country nor the other properties.
    expect(payload).not.toHaveProperty('address');
    expect(payload).not.toHaveProperty('properties');
    const userinfo = await fetch(`${service.baseUrl}/oidc/me`, { headers: { authorization: `Bearer ${String(tokens.body.access_token)}` } });
    expect(await userinfo.json()).toEqual({ sub: ada.identity.id, given_name: 'Ada', family_name: 'Lovelace', name: 'Ada Lovelace', email: 'ada@example.org' });
  });

  it('the refusals: PKCE mismatch, wrong redirect_uri, a replayed code, a wrong secret, a removed client', async () => {
    const client = await addClient(service.store, { redirectUris: ['https://shop.example/cb', 'https://shop.example/other'] });
    const { verifier, challenge } = pkce();
    const first = await loginToCode({ client, challenge });
    const code = first.back.searchParams.get('code')!;
    const wrongSecret = await exchange(service.baseUrl, { ...client, clientSecret: 'not-the-secret' }, { code, redirect_uri: 'https://shop.example/cb', code_verifier: verifier });
    expect([wrongSecret.status, wrongSecret.body.error]).toEqual([401, 'invalid_client']);
    const badVerifier = await exchange(service.baseUrl, client, { code, redirect_uri: 'https://shop.example/cb', code_verifier: pkce().verifier });
    expect([badVerifier.status, badVerifier.body.error]).toEqual([400, 'invalid_grant']);

    const second = await loginToCode({ client, challenge });
    const code2 = second.back.searchParams.get('code')!;
    const wrongRedirect = await exchange(service.baseUrl, client, { code: code2, redirect_uri: 'https://shop.example/other', code_verifier: verifier });
    expect([wrongRedirect.status, wrongRedirect.body.error]).toEqual([400, 'invalid_grant']);

    const third = await loginToCode({ client, challenge });
    const code3 = third.back.searchParams.get('code')!;
    const good = await exchange(service.baseUrl, client, { code: code3, redirect_uri: 'https://shop.example/cb', code_verifier: verifier });
    expect(good.status).toBe(200);
    const replay = await exchange(service.baseUrl, client, { code: code3, redirect_uri: 'https://shop.example/cb', code_verifier: verifier });
    expect([replay.status, replay.body.error]).toEqual([400, 'invalid_grant']);

    const fourth = await loginToCode({ client, challenge });
    expect(await service.store.oidcClients.remove(client.clientId)).toBe(true);
    const removed = await exchange(service.baseUrl, client, { code: fourth.back.searchParams.get('code')!, redirect_uri: 'https://shop.example/cb', code_verifier: verifier });
    expect([removed.status, removed.body.error]).toEqual([401, 'invalid_client']);
  });

  it('a public client must use PKCE; an unregistered redirect URI is never redirected to', async () => {
    const client = await addClient(service.store, { clientSecret: null, tokenAuth: 'none', redirectUris: ['http://127.0.0.1:9/cb'] });
    const jar = new CookieJar();
    const noPkce = await authorize(service.baseUrl, jar, { client });
    const to = new URL(noPkce.headers.get('location')!);
    expect(`${to.origin}${to.pathname}`).toBe('http://127.0.0.1:9/cb');
    expect(to.searchParams.get('error')).toBe('invalid_request');
    const elsewhere = await authorize(service.baseUrl, jar, { client, redirectUri: 'https://evil.example/cb', challenge: pkce().challenge });
    expect(elsewhere.status).toBe(400);
    expect(elsewhere.headers.get('location')).toBeNull();
    expect(await elsewhere.text()).toContain('redirect_uri');
  });

  it('a rejection in the signing app ends the login with access_denied at the relying party', async () => {
    const client = await addClient(service.store, { redirectUris: ['https://shop.example/cb'] });
    const jar = new CookieJar();
    const started = await authorize(service.baseUrl, jar, { client, challenge: pkce().challenge });
    const uid = interactionUid(started.headers.get('location')!);
    const { tab, signUrl } = await loginPageCode(service.baseUrl, service.wsUrl, jar, uid, service.publicBaseUrl);
    try {
      await approve(signUrl, ada.identity.id, privateKeyFromPem(ada.privateKeyPem), 'reject');
      await tab.next('SignatureRejected');
      const done = await complete(service.baseUrl, jar, uid, tab.tabId, service.publicBaseUrl);
      const back = await followToRp(service.baseUrl, jar, done.body.redirectTo!);
      expect(back.searchParams.get('error')).toBe('access_denied');
    } finally {
      tab.ws.close();
    }
  });

  it('a result counts once and only for its own login: another interaction of the same browser, or a second completion, gets nothing', async () => {
    const client = await addClient(service.store, { redirectUris: ['https://shop.example/cb'] });
    const jar = new CookieJar();
    const a = interactionUid((await authorize(service.baseUrl, jar, { client, challenge: pkce().challenge })).headers.get('location')!);
    const { tab, signUrl } = await loginPageCode(service.baseUrl, service.wsUrl, jar, a, service.publicBaseUrl);
    try {
      await approve(signUrl, ada.identity.id, privateKeyFromPem(ada.privateKeyPem));
      await tab.next('SignatureReceived');
      // A second login started in the same browser: its interaction cookie replaces the first one's.
      const b = interactionUid((await authorize(service.baseUrl, jar, { client, challenge: pkce().challenge })).headers.get('location')!);
      const other = await complete(service.baseUrl, jar, b, tab.tabId, service.publicBaseUrl);
      expect([other.status, other.body.code]).toEqual([404, 'not_found']);
      // Without the right Origin (a cross-site form), refused before anything is read.
      const crossSite = await complete(service.baseUrl, jar, b, tab.tabId, 'https://evil.example');
      expect([crossSite.status, crossSite.body.code]).toEqual([403, 'origin_not_allowed']);
    } finally {
      tab.ws.close();
    }
  });

  it('a provider session: the same site logs the browser in again without a scan, unless it asks with prompt=login; login_hint changes nothing', async () => {
    const client = await addClient(service.store, { redirectUris: ['https://shop.example/cb'] });
    const first = await loginToCode({ client, challenge: pkce().challenge, extra: { login_hint: 'someone-else@example.org' } });
    expect(first.back.searchParams.get('code')).toBeTruthy();
    // Same browser (cookie jar), same site: straight back with a code.
    const again = await authorize(service.baseUrl, first.jar, { client, challenge: pkce().challenge });
    const back = await followToRp(service.baseUrl, first.jar, again.headers.get('location')!);
    expect(`${back.origin}${back.pathname}`).toBe('https://shop.example/cb');
    expect(back.searchParams.get('code')).toBeTruthy();
    // max_age=0: the last approval is too old, the QR page again.
    const tooOld = await authorize(service.baseUrl, first.jar, { client, challenge: pkce().challenge, extra: { max_age: '0' } });
    expect(interactionUid(tooOld.headers.get('location')!)).toBeTruthy();
    // prompt=login: the QR page again.
    const forced = await authorize(service.baseUrl, first.jar, { client, challenge: pkce().challenge, extra: { prompt: 'login' } });
    expect(forced.status).toBe(303);
    expect(interactionUid(forced.headers.get('location')!)).toBeTruthy();
    // Another site the browser never approved: the QR page, since its claims need the person's approval.
    const other = await addClient(service.store, { redirectUris: ['https://other.example/cb'] });
    const otherStart = await authorize(service.baseUrl, first.jar, { client: other, challenge: pkce().challenge });
    expect(interactionUid(otherStart.headers.get('location')!)).toBeTruthy();
    // prompt=none in a browser without a session: login_required at the site.
    const none = await authorize(service.baseUrl, new CookieJar(), { client, challenge: pkce().challenge, extra: { prompt: 'none' } });
    expect(new URL(none.headers.get('location')!).searchParams.get('error')).toBe('login_required');
  });

  it('RP-initiated logout: the confirmation page, then back to the registered post-logout URI; the session is gone', async () => {
    const client = await addClient(service.store, { redirectUris: ['https://shop.example/cb'], postLogoutRedirectUris: ['https://shop.example/bye'] });
    const { verifier, challenge } = pkce();
    const { back, jar } = await loginToCode({ client, challenge });
    const tokens = await exchange(service.baseUrl, client, { code: back.searchParams.get('code')!, redirect_uri: 'https://shop.example/cb', code_verifier: verifier });
    const query = new URLSearchParams({ id_token_hint: String(tokens.body.id_token), post_logout_redirect_uri: 'https://shop.example/bye', state: 'bye-state' });
    const ask = await fetch(`${service.baseUrl}/oidc/session/end?${query}`, { headers: { cookie: jar.header() } });
    jar.take(ask);
    expect(ask.status).toBe(200);
    const page = await ask.text();
    const xsrf = /name="xsrf" value="([^"]+)"/.exec(page)?.[1];
    expect(xsrf).toBeTruthy();
    const confirm = await fetch(`${service.baseUrl}/oidc/session/end/confirm`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: jar.header(), 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ xsrf: xsrf!, logout: 'yes' }),
    });
    jar.take(confirm);
    expect(confirm.status).toBe(303);
    const to = new URL(confirm.headers.get('location')!);
    expect(`${to.origin}${to.pathname}`).toBe('https://shop.example/bye');
    expect(to.searchParams.get('state')).toBe('bye-state');
    // Logged out: the next authorization needs the QR page again.
    const after = await authorize(service.baseUrl, jar, { client, challenge: pkce().challenge });
    expect(interactionUid(after.headers.get('location')!)).toBeTruthy();
  });

  it('pairwise subjects: stable for one site, different for another site, never the identity id', async () => {
    const subOf = async (client: Awaited<ReturnType<typeof addClient>>) => {
      const { verifier, challenge } = pkce();
      const { back } = await loginToCode({ client, challenge, scope: 'openid' });
      const redirectUri = client.redirectUris[0]!;
      const tokens = await exchange(service.baseUrl, client, { code: back.searchParams.get('code')!, redirect_uri: redirectUri, code_verifier: verifier });
      const { payload } = await jwtVerify(String(tokens.body.id_token), createRemoteJWKSet(new URL(`${service.baseUrl}/oidc/jwks`)));
      return payload.sub;
    };
    const shop = await addClient(service.store, { subjectType: 'pairwise', redirectUris: ['https://shop.example/cb'] });
    const shopAgain = await addClient(service.store, { subjectType: 'pairwise', redirectUris: ['https://shop.example/other-cb'] });
    const bank = await addClient(service.store, { subjectType: 'pairwise', redirectUris: ['https://bank.example/cb'] });
    const [a, b, c, d] = [await subOf(shop), await subOf(shop), await subOf(shopAgain), await subOf(bank)];
    expect(a).toBe(b);
    // The same host is one sector: its clients see one subject.
    expect(c).toBe(a);
    expect(d).not.toBe(a);
    for (const sub of [a, d]) expect(sub).not.toBe(ada.identity.id);
  });

  it('discovery names the issuer, EdDSA and ES256, PKCE S256, and no dynamic registration', async () => {
    const response = await fetch(`${service.baseUrl}/oidc/.well-known/openid-configuration`);
    const discovery = (await response.json()) as Record<string, unknown>;
    expect(discovery.issuer).toBe(`${service.publicBaseUrl}/oidc`);
    expect(discovery.id_token_signing_alg_values_supported).toEqual(['EdDSA', 'ES256']);
    expect(discovery.code_challenge_methods_supported).toEqual(['S256']);
    expect(discovery.response_types_supported).toEqual(['code']);
    expect(discovery).not.toHaveProperty('registration_endpoint');
    expect(discovery.subject_types_supported).toEqual(['public', 'pairwise']);
    const jwks = (await (await fetch(`${service.baseUrl}/oidc/jwks`)).json()) as { keys: Array<Record<string, unknown>> };
    expect(jwks.keys.map((k) => k.alg).sort()).toEqual(['ES256', 'EdDSA']);
    for (const key of jwks.keys) expect(key).not.toHaveProperty('d');
  });
});
