import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { privateKeyFromPem } from '../../src/identity/keys.js';
import { OIDC_TTL } from '../../src/oidc/provider.js';
import { PUBLISH_AHEAD_MS, rotateOidcKeys } from '../../src/oidc/signing-keys.js';
import type { OidcClient } from '../../src/store/oidc-store.js';
import { addClient, approve, authorize, complete, CookieJar, exchange, followToRp, interactionUid, loginPageCode, pkce } from '../helpers/oidc-flow.js';
import { makeIdentity, startService, type TestService } from '../helpers/service.js';

/**
 * The OpenID Provider's time-bound parts on one node whose clock the test moves (docs/oidc.md "Keys" and
 * "Lifetimes"): the key ring's publish-ahead and retirement, and the authorization code's lifetime, which the
 * store enforces by the service's clock. The library's own token times (iat, exp) follow the real clock, so a
 * refusal here comes from the service's clock alone.
 */

let service: TestService;
let ada: Awaited<ReturnType<typeof makeIdentity>>;
let client: OidcClient;
const REDIRECT = 'https://shop.example/cb';

beforeAll(async () => {
  service = await startService({ logLevel: 'error' });
  ada = await makeIdentity(service, { FIRST: 'Ada', EMAIL: 'ada@example.org' });
  client = await addClient(service.store, { redirectUris: [REDIRECT] });
});
afterAll(async () => {
  await service?.close();
});

/** A whole login up to the code at the relying party, with its PKCE verifier. */
async function loginToCode(): Promise<{ code: string; verifier: string }> {
  const jar = new CookieJar();
  const { verifier, challenge } = pkce();
  const started = await authorize(service.baseUrl, jar, { client, challenge });
  expect(started.status).toBe(303);
  const uid = interactionUid(started.headers.get('location')!);
  const { tab, signUrl, status } = await loginPageCode(service.baseUrl, service.wsUrl, jar, uid, service.publicBaseUrl);
  expect(status).toBe(200);
  try {
    expect((await approve(signUrl, ada.identity.id, privateKeyFromPem(ada.privateKeyPem))).answer.state).toBe('approved');
    await tab.next('SignatureReceived');
    const done = await complete(service.baseUrl, jar, uid, tab.tabId, service.publicBaseUrl);
    expect(done.status).toBe(200);
    const back = await followToRp(service.baseUrl, jar, done.body.redirectTo!);
    return { code: back.searchParams.get('code')!, verifier };
  } finally {
    tab.ws.close();
  }
}

const exchangeCode = ({ code, verifier }: { code: string; verifier: string }) => exchange(service.baseUrl, client, { code, redirect_uri: REDIRECT, code_verifier: verifier });

/** A login's ID token. */
async function idToken(): Promise<string> {
  const tokens = await exchangeCode(await loginToCode());
  expect(tokens.status).toBe(200);
  return String(tokens.body.id_token);
}

const kidOf = (jwt: string): string => decodeProtectedHeader(jwt).kid!;
const published = async (): Promise<string[]> => ((await (await fetch(`${service.baseUrl}/oidc/jwks`)).json()) as { keys: { kid: string }[] }).keys.map((k) => k.kid);
/** Verifies against the JWKS as a relying party that fetches it now (a fresh key set, no cache). */
const verify = (jwt: string) => jwtVerify(jwt, createRemoteJWKSet(new URL(`${service.baseUrl}/oidc/jwks`)), { issuer: `${service.publicBaseUrl}/oidc`, audience: client.clientId });
/** Moves the service's clock and lets the node read its key rings, as its minute timer does. */
async function advance(ms: number): Promise<void> {
  service.clock.advance(ms);
  await service.app.tabwire.oidc.reloadKeys();
}

describe('ID token keys: rotation on the service clock', () => {
  it('a rotated key is published at once, signs after the publish-ahead; the replaced key verifies its tokens until its retirement window ends', async () => {
    const tokenA = await idToken();
    const kidA = kidOf(tokenA);
    expect(await published()).toContain(kidA);

    const rotated = await rotateOidcKeys(service.store.serverKeys, service.clock);
    await service.app.tabwire.oidc.reloadKeys();
    // Published before it signs: a relying party that fetches the JWKS now already knows the next key.
    expect(await published()).toEqual(expect.arrayContaining([kidA, rotated.EdDSA, rotated.ES256]));
    expect(kidOf(await idToken())).toBe(kidA);

    await advance(PUBLISH_AHEAD_MS - 1);
    expect(kidOf(await idToken()), 'a millisecond before the publish-ahead ends').toBe(kidA);
    await advance(1);
    const tokenB = await idToken();
    expect(kidOf(tokenB)).toBe(rotated.EdDSA);
    expect((await verify(tokenB)).payload.sub).toBe(ada.identity.id);
    // A token signed with the replaced key before the switch still verifies.
    expect((await verify(tokenA)).payload.sub).toBe(ada.identity.id);

    // Kept for the ID token lifetime plus 5 minutes after the new key started signing, then gone.
    const retirement = (OIDC_TTL.IdToken + 5 * 60) * 1000;
    await advance(retirement - 1);
    expect(await published()).toEqual(expect.arrayContaining([kidA, rotated.EdDSA]));
    expect((await verify(tokenA)).payload.sub).toBe(ada.identity.id);
    await advance(1);
    const after = await published();
    expect(after).not.toContain(kidA);
    expect(after).toEqual(expect.arrayContaining([rotated.EdDSA, rotated.ES256]));
    await expect(verify(tokenA)).rejects.toMatchObject({ code: 'ERR_JWKS_NO_MATCHING_KEY' });
    // The new key goes on signing, and its tokens verify.
    const later = await idToken();
    expect(kidOf(later)).toBe(rotated.EdDSA);
    expect((await verify(later)).payload.sub).toBe(ada.identity.id);
  });
});

describe('authorization code lifetime on the service clock', () => {
  it(`a code is exchanged within its ${OIDC_TTL.AuthorizationCode} s; after that it is invalid_grant though the library's own clock has barely moved`, async () => {
    const inTime = await loginToCode();
    service.clock.advance(OIDC_TTL.AuthorizationCode * 1000 - 1000);
    expect((await exchangeCode(inTime)).status).toBe(200);

    const late = await loginToCode();
    service.clock.advance(OIDC_TTL.AuthorizationCode * 1000 + 1);
    const refused = await exchangeCode(late);
    expect([refused.status, refused.body.error]).toEqual([400, 'invalid_grant']);
  });
});
