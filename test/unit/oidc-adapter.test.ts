import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Provider, { errors, type Adapter, type AdapterConstructor } from 'oidc-provider';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { MAX_UNTIMED_LIFETIME_MS, oidcAdapter } from '../../src/oidc/adapter.js';
import { clientMetadata } from '../../src/oidc/client-metadata.js';
import { openSqliteStore } from '../../src/store/sqlite/open.js';
import type { OidcClient, Store } from '../../src/store/stores.js';

// The oidc-provider adapter (src/oidc/adapter.ts) over a real SQLite store, then under the library itself.

const SECOND = 1000;

const confidential = (clientId: string, o: Partial<OidcClient> = {}): OidcClient => ({
  clientId,
  clientSecret: 'a-long-enough-client-secret-of-32-bytes-or-more',
  tokenAuth: 'client_secret_basic',
  subjectType: 'pairwise',
  idTokenAlg: 'EdDSA',
  name: 'The Shop',
  redirectUris: ['https://shop.example/cb'],
  postLogoutRedirectUris: ['https://shop.example/bye'],
  createdAt: 1_700_000_000_000,
  ...o,
});

const publicClient = (clientId: string): OidcClient =>
  confidential(clientId, { clientSecret: null, tokenAuth: 'none', subjectType: 'public', idTokenAlg: 'ES256', name: null, postLogoutRedirectUris: [] });

let dir: string;
let store: Store;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tabwire-oidc-adapter-'));
  store = await openSqliteStore(join(dir, 'db.sqlite'));
});
afterAll(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('clientMetadata', () => {
  it('maps a confidential client whole, with refresh tokens', () => {
    expect(clientMetadata(confidential('rp-c'))).toEqual({
      client_id: 'rp-c',
      client_secret: 'a-long-enough-client-secret-of-32-bytes-or-more',
      client_name: 'The Shop',
      redirect_uris: ['https://shop.example/cb'],
      post_logout_redirect_uris: ['https://shop.example/bye'],
      token_endpoint_auth_method: 'client_secret_basic',
      subject_type: 'pairwise',
      id_token_signed_response_alg: 'EdDSA',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
    });
  });

  it('a public client has no secret, no name when none is set, and no refresh tokens', () => {
    expect(clientMetadata(publicClient('rp-p'))).toEqual({
      client_id: 'rp-p',
      redirect_uris: ['https://shop.example/cb'],
      post_logout_redirect_uris: [],
      token_endpoint_auth_method: 'none',
      subject_type: 'public',
      id_token_signed_response_alg: 'ES256',
      grant_types: ['authorization_code'],
      response_types: ['code'],
    });
  });
});

describe('oidcAdapter over SQLite', () => {
  let clock: ManualClock;
  let Adapter: AdapterConstructor;
  const model = (name: string): Adapter => new Adapter(name);
  beforeEach(() => {
    clock = new ManualClock(1_800_000_000_000);
    Adapter = oidcAdapter({ entries: store.oidcEntries, clients: store.oidcClients, clock, errors });
  });

  it('a record lives expiresIn seconds from its save by the clock, and no longer', async () => {
    await model('AccessToken').upsert('at-1', { jti: 'at-1', kind: 'AccessToken', scope: 'openid' }, 60);
    clock.advance(60 * SECOND - 1);
    expect(await model('AccessToken').find('at-1')).toEqual({ jti: 'at-1', kind: 'AccessToken', scope: 'openid' });
    clock.advance(1);
    expect(await model('AccessToken').find('at-1')).toBeUndefined();
  });

  it(`a record saved without a lifetime expires after ${MAX_UNTIMED_LIFETIME_MS / 86_400_000} days`, async () => {
    expect(MAX_UNTIMED_LIFETIME_MS).toBe(14 * 86_400_000);
    await model('Grant').upsert('grant-untimed', { jti: 'grant-untimed', kind: 'Grant' });
    clock.advance(MAX_UNTIMED_LIFETIME_MS - 1);
    expect(await model('Grant').find('grant-untimed')).toBeDefined();
    clock.advance(1);
    expect(await model('Grant').find('grant-untimed')).toBeUndefined();
  });

  it('consume: find then shows `consumed` in epoch seconds; a second consume is refused as the protocol error', async () => {
    await model('AuthorizationCode').upsert('code-1', { jti: 'code-1', kind: 'AuthorizationCode', grantId: 'g-c' }, 60);
    expect(await model('AuthorizationCode').find('code-1')).not.toHaveProperty('consumed');
    clock.advance(1_500);
    await model('AuthorizationCode').consume('code-1');
    expect(await model('AuthorizationCode').find('code-1')).toEqual({
      jti: 'code-1', kind: 'AuthorizationCode', grantId: 'g-c', consumed: Math.floor(clock.now() / 1000),
    });
    const again = model('AuthorizationCode').consume('code-1');
    await expect(again).rejects.toBeInstanceOf(errors.InvalidGrant);
    await expect(again).rejects.toMatchObject({ error: 'invalid_grant', status: 400 });
    await expect(model('RefreshToken').consume('never-saved')).rejects.toBeInstanceOf(errors.InvalidGrant);
    // A pushed request used twice is refused as its own error (RFC 9126 §2.3).
    await model('PushedAuthorizationRequest').upsert('par-1', { jti: 'par-1' }, 60);
    await model('PushedAuthorizationRequest').consume('par-1');
    await expect(model('PushedAuthorizationRequest').consume('par-1')).rejects.toMatchObject({ error: 'invalid_request_uri' });
  });

  it('of concurrent consumes of one code exactly one succeeds; the others are invalid_grant', async () => {
    await model('AuthorizationCode').upsert('code-race', { jti: 'code-race', grantId: 'g-race' }, 60);
    const outcomes = await Promise.allSettled(Array.from({ length: 8 }, () => model('AuthorizationCode').consume('code-race')));
    expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(1);
    for (const o of outcomes.filter((o) => o.status === 'rejected')) expect((o as PromiseRejectedResult).reason).toBeInstanceOf(errors.InvalidGrant);
  });

  it('a Session is found by the uid in its payload; nothing is found by user code', async () => {
    await model('Session').upsert('sess-1', { jti: 'sess-1', kind: 'Session', uid: 'uid-1', accountId: 'acc' }, 3600);
    expect(await model('Session').findByUid('uid-1')).toMatchObject({ jti: 'sess-1', accountId: 'acc' });
    expect(await model('Session').findByUid('uid-2')).toBeUndefined();
    expect(await model('Session').findByUserCode('ABCD-EFGH')).toBeUndefined();
    await model('Session').destroy('sess-1');
    expect(await model('Session').findByUid('uid-1')).toBeUndefined();
  });

  it("revokeByGrantId takes the grant's codes and tokens, not the Grant record, an Interaction, or another grant's tokens", async () => {
    for (const [name, id] of [['AuthorizationCode', 'r-code'], ['AccessToken', 'r-at'], ['RefreshToken', 'r-rt']] as const) {
      await model(name).upsert(id, { jti: id, grantId: 'g-r' }, 600);
    }
    await model('Grant').upsert('g-r', { jti: 'g-r', accountId: 'acc' }, 600);
    await model('Interaction').upsert('int-r', { jti: 'int-r', grantId: 'g-r' }, 600);
    await model('AccessToken').upsert('other-at', { jti: 'other-at', grantId: 'g-other' }, 600);
    await model('RefreshToken').revokeByGrantId('g-r');
    for (const [name, id] of [['AuthorizationCode', 'r-code'], ['AccessToken', 'r-at'], ['RefreshToken', 'r-rt']] as const) {
      expect(await model(name).find(id)).toBeUndefined();
    }
    expect(await model('Grant').find('g-r')).toBeDefined();
    expect(await model('Interaction').find('int-r')).toBeDefined();
    expect(await model('AccessToken').find('other-at')).toBeDefined();
  });

  it('ids no record can have (too long, U+0000) are not found rather than failing the store', async () => {
    expect(await model('AuthorizationCode').find('x'.repeat(10_000))).toBeUndefined();
    expect(await model('AuthorizationCode').find('a\u0000b')).toBeUndefined();
    expect(await model('Session').findByUid('a\u0000b')).toBeUndefined();
    await expect(model('AuthorizationCode').consume('a\u0000b')).rejects.toBeInstanceOf(errors.InvalidGrant);
    expect(await model('Client').find('c'.repeat(256))).toBeUndefined();
  });

  it('Client: find gives the registered client as metadata; a removed one is not found; writes are refused', async () => {
    expect(await store.oidcClients.insert(confidential('rp-adapter'))).toBe(true);
    expect(await model('Client').find('rp-adapter')).toEqual(clientMetadata(confidential('rp-adapter')));
    expect(await store.oidcClients.remove('rp-adapter')).toBe(true);
    expect(await model('Client').find('rp-adapter')).toBeUndefined();
    await expect(model('Client').upsert('rp-new', { client_id: 'rp-new' })).rejects.toThrow(/read-only/);
    await expect(model('Client').destroy('rp-new')).rejects.toThrow(/read-only/);
    expect(await store.oidcClients.get('rp-new')).toBeUndefined();
  });
});

describe('oidcAdapter under oidc-provider', () => {
  const clock = new ManualClock(); // the library stamps payloads with the real time; the store's expiry follows this clock
  let provider: Provider;
  beforeAll(async () => {
    const jwk = (kind: 'ed25519' | 'ec') =>
      (kind === 'ec' ? generateKeyPairSync('ec', { namedCurve: 'P-256' }) : generateKeyPairSync('ed25519')).privateKey.export({ format: 'jwk' });
    provider = new Provider('https://login.example', {
      adapter: oidcAdapter({ entries: store.oidcEntries, clients: store.oidcClients, clock, errors }),
      jwks: { keys: [jwk('ed25519'), jwk('ec')] },
      cookies: { keys: ['a-cookie-key-for-the-test-provider'] },
      ttl: { Interaction: 600, Session: 3600, Grant: 3600 },
      // What the project's clients may ask for (docs/oidc.md): pairwise subjects, no development interactions.
      subjectTypes: ['public', 'pairwise'],
      pairwiseIdentifier: async (_ctx: unknown, accountId: string, client: { sectorIdentifier: string }) => `${client.sectorIdentifier}:${accountId}`,
      features: { devInteractions: { enabled: false } },
    });
    await store.oidcClients.insert(confidential('rp-lib'));
    await store.oidcClients.insert(publicClient('rp-lib-public'));
  });

  it('Client.find loads registered clients as the library validates them, and not removed ones', async () => {
    const client = await provider.Client.find('rp-lib');
    expect(client).toMatchObject({ clientId: 'rp-lib', clientSecret: confidential('rp-lib').clientSecret, redirectUris: ['https://shop.example/cb'] });
    expect(client!.metadata()).toMatchObject({ subject_type: 'pairwise', id_token_signed_response_alg: 'EdDSA', grant_types: ['authorization_code', 'refresh_token'] });
    expect((await provider.Client.find('rp-lib-public'))!.metadata()).toMatchObject({ token_endpoint_auth_method: 'none', grant_types: ['authorization_code'] });
    expect(await provider.Client.find('rp-unknown')).toBeUndefined();
    await store.oidcClients.insert(publicClient('rp-lib-gone'));
    expect(await provider.Client.find('rp-lib-gone')).toBeDefined();
    await store.oidcClients.remove('rp-lib-gone');
    expect(await provider.Client.find('rp-lib-gone')).toBeUndefined();
  });

  it('an AuthorizationCode saved by the library round-trips, is refused once consumed, and expires with the clock', async () => {
    const client = await provider.Client.find('rp-lib');
    const issue = () =>
      new provider.AuthorizationCode({ client, accountId: 'alice', grantId: 'grant-lib', redirectUri: 'https://shop.example/cb', scope: 'openid', nonce: 'n-1' }).save();
    const value = await issue();
    const found = await provider.AuthorizationCode.find(value);
    expect(found).toMatchObject({ jti: value, accountId: 'alice', clientId: 'rp-lib', grantId: 'grant-lib', nonce: 'n-1', isValid: true });
    expect(found!.consumed).toBeUndefined();

    await found!.consume();
    const used = await provider.AuthorizationCode.find(value);
    expect(used!.consumed).toBe(Math.floor(clock.now() / 1000));
    expect(used!.isValid).toBe(false);
    // A node that read the code before it was consumed cannot consume it again.
    await expect(found!.consume()).rejects.toMatchObject({ error: 'invalid_grant' });

    const later = await issue();
    expect(await provider.AuthorizationCode.find(later)).toBeDefined();
    clock.advance(60 * SECOND); // the library's AuthorizationCode lifetime
    expect(await provider.AuthorizationCode.find(later)).toBeUndefined();
  });
});
