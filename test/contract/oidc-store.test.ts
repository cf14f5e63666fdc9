import { describe, expect, it } from 'vitest';
import { StoreValueError } from '../../src/store/sql/column-rules.js';
import type { OidcClient, OidcEntry } from '../../src/store/stores.js';
import { BACKENDS, useStores } from '../helpers/backends.js';

// OidcEntryStore and OidcClientStore (src/store/oidc-store.ts) on every backend; on PostgreSQL `other` is a
// second node (its own pool) on the same database.

const NOW = 1_700_000_000_000;
const MINUTE = 60_000;

const entry = (model: string, id: string, o: Partial<OidcEntry> = {}): OidcEntry => ({
  model, id, payload: JSON.stringify({ jti: id, kind: model }), grantId: null, uid: null, expiresAt: NOW + 10 * MINUTE, ...o,
});

describe.each(BACKENDS)('OpenID Provider entry store on $name', (backend) => {
  const s = useStores(backend);

  it('upsert creates, then replaces the whole record (payload, keys, expiry) and leaves it unconsumed', async () => {
    await s.store.oidcEntries.upsert(entry('Session', 'sess-1', { uid: 'uid-1', payload: '{"v":1}' }));
    expect(await s.other.oidcEntries.find('Session', 'sess-1', NOW)).toEqual({ payload: '{"v":1}', consumedAt: null });
    expect(await s.store.oidcEntries.consume('Session', 'sess-1', NOW)).toBe(true);

    await s.other.oidcEntries.upsert(entry('Session', 'sess-1', { uid: 'uid-2', payload: '{"v":2}', expiresAt: NOW + 20 * MINUTE }));
    expect(await s.store.oidcEntries.find('Session', 'sess-1', NOW + 15 * MINUTE)).toEqual({ payload: '{"v":2}', consumedAt: null });
    expect(await s.store.oidcEntries.findByUid('Session', 'uid-1', NOW)).toBeUndefined();
    expect(await s.store.oidcEntries.findByUid('Session', 'uid-2', NOW)).toEqual({ payload: '{"v":2}', consumedAt: null });
  });

  it('the same id under two models is two records', async () => {
    await s.store.oidcEntries.upsert(entry('AccessToken', 'shared-id', { payload: '"a"' }));
    await s.store.oidcEntries.upsert(entry('RefreshToken', 'shared-id', { payload: '"r"' }));
    expect((await s.store.oidcEntries.find('AccessToken', 'shared-id', NOW))?.payload).toBe('"a"');
    await s.store.oidcEntries.destroy('RefreshToken', 'shared-id');
    expect(await s.store.oidcEntries.find('RefreshToken', 'shared-id', NOW)).toBeUndefined();
    expect((await s.store.oidcEntries.find('AccessToken', 'shared-id', NOW))?.payload).toBe('"a"');
  });

  it('find and findByUid hide a record from its expiry on, and missing ones are undefined', async () => {
    await s.store.oidcEntries.upsert(entry('Session', 'sess-exp', { uid: 'uid-exp', expiresAt: NOW + MINUTE }));
    expect(await s.store.oidcEntries.find('Session', 'sess-exp', NOW + MINUTE - 1)).toBeDefined();
    expect(await s.store.oidcEntries.findByUid('Session', 'uid-exp', NOW + MINUTE - 1)).toBeDefined();
    expect(await s.store.oidcEntries.find('Session', 'sess-exp', NOW + MINUTE)).toBeUndefined();
    expect(await s.other.oidcEntries.findByUid('Session', 'uid-exp', NOW + MINUTE)).toBeUndefined();
    // A uid is a key of its model only.
    expect(await s.store.oidcEntries.findByUid('Interaction', 'uid-exp', NOW)).toBeUndefined();
    expect(await s.store.oidcEntries.find('Session', 'nothing', NOW)).toBeUndefined();
    expect(await s.store.oidcEntries.findByUid('Session', 'nothing', NOW)).toBeUndefined();
    // Ids longer than any stored one are just not found (reads are not refused, writes are).
    expect(await s.store.oidcEntries.find('Session', 'x'.repeat(1000), NOW)).toBeUndefined();
  });

  it('consume: of 8 concurrent callers on both nodes exactly one wins, for each of 20 records; find then shows when', async () => {
    const ids = Array.from({ length: 20 }, (_, i) => `code-race-${i}`);
    await Promise.all(ids.map((id) => s.store.oidcEntries.upsert(entry('AuthorizationCode', id))));
    const results = await Promise.all(
      ids.map((id) =>
        Promise.all(Array.from({ length: 8 }, (_, n) => (n % 2 ? s.other : s.store).oidcEntries.consume('AuthorizationCode', id, NOW + n))),
      ),
    );
    for (const wins of results) expect(wins.filter(Boolean)).toHaveLength(1);
    for (const [i, id] of ids.entries()) {
      const winner = results[i]!.indexOf(true);
      expect(await s.other.oidcEntries.find('AuthorizationCode', id, NOW)).toEqual({ payload: entry('AuthorizationCode', id).payload, consumedAt: NOW + winner });
    }
    expect(await s.store.oidcEntries.consume('AuthorizationCode', ids[0]!, NOW + 100)).toBe(false);
  });

  it('consume of an expired or missing record is false and marks nothing', async () => {
    await s.store.oidcEntries.upsert(entry('RefreshToken', 'rt-exp', { expiresAt: NOW + MINUTE }));
    expect(await s.store.oidcEntries.consume('RefreshToken', 'rt-exp', NOW + MINUTE)).toBe(false);
    expect(await s.store.oidcEntries.find('RefreshToken', 'rt-exp', NOW)).toEqual({ payload: entry('RefreshToken', 'rt-exp').payload, consumedAt: null });
    expect(await s.store.oidcEntries.consume('RefreshToken', 'rt-missing', NOW)).toBe(false);
    expect(await s.store.oidcEntries.consume('AccessToken', 'rt-exp', NOW)).toBe(false);
  });

  it('destroy removes the record; destroying a missing one is harmless', async () => {
    await s.store.oidcEntries.upsert(entry('Interaction', 'int-1'));
    await s.other.oidcEntries.destroy('Interaction', 'int-1');
    expect(await s.store.oidcEntries.find('Interaction', 'int-1', NOW)).toBeUndefined();
    await s.store.oidcEntries.destroy('Interaction', 'int-1');
  });

  it('revokeByGrantId takes every record of that grant, of any model, and nothing else', async () => {
    const mine = [entry('AuthorizationCode', 'g1-code', { grantId: 'grant-1' }), entry('AccessToken', 'g1-at', { grantId: 'grant-1' }),
      entry('RefreshToken', 'g1-rt', { grantId: 'grant-1' })];
    const others = [entry('AccessToken', 'g2-at', { grantId: 'grant-2' }), entry('Grant', 'grant-1'), entry('Session', 'g-sess', { uid: 'grant-1' })];
    for (const e of [...mine, ...others]) await s.store.oidcEntries.upsert(e);
    await s.other.oidcEntries.revokeByGrantId('grant-1');
    for (const e of mine) expect(await s.store.oidcEntries.find(e.model, e.id, NOW)).toBeUndefined();
    for (const e of others) expect(await s.store.oidcEntries.find(e.model, e.id, NOW)).toBeDefined();
  });

  it('deleteExpired deletes what expired before the instant, says how many, and keeps the rest', async () => {
    const base = NOW + 1000 * MINUTE;
    await s.store.oidcEntries.upsert(entry('AccessToken', 'de-1', { expiresAt: base - 2 }));
    await s.store.oidcEntries.upsert(entry('Session', 'de-2', { expiresAt: base - 1, uid: 'de-uid' }));
    await s.store.oidcEntries.upsert(entry('AccessToken', 'de-3', { expiresAt: base }));
    await s.store.oidcEntries.upsert(entry('AccessToken', 'de-4', { expiresAt: base + 1 }));
    // Earlier tests' records (all expiring by NOW + 20 min) go too: count them first.
    const earlier = await s.store.oidcEntries.deleteExpired(NOW + 21 * MINUTE);
    expect(earlier).toBeGreaterThan(0);
    expect(await s.other.oidcEntries.deleteExpired(base)).toBe(2);
    expect(await s.store.oidcEntries.deleteExpired(base)).toBe(0);
    expect(await s.store.oidcEntries.find('AccessToken', 'de-3', base - 1)).toBeDefined();
    expect(await s.store.oidcEntries.find('AccessToken', 'de-1', NOW)).toBeUndefined();
  });

  it('refuses unbounded values on every backend, and stores a payload up to the bound', async () => {
    const big = JSON.stringify({ params: 'p'.repeat(65_536 - 13) });
    expect(big).toHaveLength(65_536);
    await s.store.oidcEntries.upsert(entry('Interaction', 'int-big', { payload: big }));
    expect((await s.other.oidcEntries.find('Interaction', 'int-big', NOW))?.payload).toBe(big);
    await expect(s.store.oidcEntries.upsert(entry('Interaction', 'int-huge', { payload: `${big} ` }))).rejects.toBeInstanceOf(StoreValueError);
    await expect(s.store.oidcEntries.upsert(entry('Interaction', 'i'.repeat(256)))).rejects.toBeInstanceOf(StoreValueError);
    await expect(s.store.oidcEntries.upsert(entry('Session', 'sess-nul', { payload: '"\u0000"' }))).rejects.toBeInstanceOf(StoreValueError);
    expect(await s.store.oidcEntries.find('Interaction', 'int-huge', NOW)).toBeUndefined();
  });
});

const client = (clientId: string, o: Partial<OidcClient> = {}): OidcClient => ({
  clientId,
  clientSecret: 'secret-of-' + clientId,
  tokenAuth: 'client_secret_basic',
  subjectType: 'pairwise',
  idTokenAlg: 'EdDSA',
  name: 'Shop "Ünïcode" 🛒',
  redirectUris: ['https://rp.example/cb', 'https://rp.example/cb?x=1&y=2'],
  postLogoutRedirectUris: ['https://rp.example/bye'],
  createdAt: NOW,
  ...o,
});

describe.each(BACKENDS)('OpenID Provider client store on $name', (backend) => {
  const s = useStores(backend);

  it('insert stores a client whole; a second insert of the id is false and changes nothing', async () => {
    expect(await s.store.oidcClients.insert(client('rp-1'))).toBe(true);
    expect(await s.other.oidcClients.get('rp-1')).toEqual(client('rp-1'));
    expect(await s.other.oidcClients.insert(client('rp-1', { name: 'other', createdAt: NOW + 1 }))).toBe(false);
    expect(await s.store.oidcClients.get('rp-1')).toEqual(client('rp-1'));
    expect(await s.store.oidcClients.get('rp-none')).toBeUndefined();
  });

  it('a public client keeps its null secret and name, and empty logout list', async () => {
    const pub = client('rp-public', { clientSecret: null, tokenAuth: 'none', subjectType: 'public', idTokenAlg: 'ES256', name: null, postLogoutRedirectUris: [] });
    expect(await s.store.oidcClients.insert(pub)).toBe(true);
    expect(await s.other.oidcClients.get('rp-public')).toEqual(pub);
  });

  it('of concurrent inserts of one id on both nodes exactly one wins', async () => {
    const wins = await Promise.all(Array.from({ length: 6 }, (_, n) => (n % 2 ? s.other : s.store).oidcClients.insert(client('rp-race', { createdAt: NOW + n }))));
    expect(wins.filter(Boolean)).toHaveLength(1);
  });

  it('list is oldest first (ties by id); remove says whether it removed', async () => {
    await s.store.oidcClients.insert(client('rp-z-old', { createdAt: NOW - 2 }));
    await s.store.oidcClients.insert(client('rp-b-new', { createdAt: NOW + 100 }));
    await s.store.oidcClients.insert(client('rp-a-new', { createdAt: NOW + 100 }));
    const ids = (await s.other.oidcClients.list()).map((c) => c.clientId);
    expect(ids.slice(0, 1)).toEqual(['rp-z-old']);
    expect(ids.slice(-2)).toEqual(['rp-a-new', 'rp-b-new']);
    expect(ids).toContain('rp-1');

    expect(await s.other.oidcClients.remove('rp-z-old')).toBe(true);
    expect(await s.store.oidcClients.remove('rp-z-old')).toBe(false);
    expect(await s.store.oidcClients.get('rp-z-old')).toBeUndefined();
    expect((await s.store.oidcClients.list()).map((c) => c.clientId)).not.toContain('rp-z-old');
  });

  it('refuses a client id or secret beyond the column bound', async () => {
    await expect(s.store.oidcClients.insert(client('c'.repeat(256)))).rejects.toBeInstanceOf(StoreValueError);
    await expect(s.store.oidcClients.insert(client('rp-long-secret', { clientSecret: 's'.repeat(256) }))).rejects.toBeInstanceOf(StoreValueError);
    expect(await s.store.oidcClients.get('rp-long-secret')).toBeUndefined();
  });
});
