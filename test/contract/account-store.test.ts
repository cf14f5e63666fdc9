import { describe, expect, it } from 'vitest';
import type { Account, ApiKey } from '../../src/store/stores.js';
import { BACKENDS, useStores } from '../helpers/backends.js';

// AccountStore and ApiKeyStore (src/store/stores.ts) on every backend.

const NOW = 1_700_000_000_000;
const account = (id: string, userName: string, createdAt = NOW): Account => ({
  id, userName, passwordHash: `scrypt$${id}`, email: `${userName}@example.org`, state: 'active', createdAt,
});
const apiKey = (id: string, createdAt = NOW): ApiKey => ({ id, keyHash: `hash-${id}`, note: `note ${id}`, createdAt, revokedAt: null });

describe.each(BACKENDS)('account store on $name', (backend) => {
  const s = useStores(backend);

  it('a user name is taken once, also by two nodes at once', async () => {
    for (let i = 0; i < 10; i++) {
      const made = await Promise.all([s.store.accounts.insert(account(`a-${i}`, `user${i}`)), s.other.accounts.insert(account(`b-${i}`, `user${i}`))]);
      expect(made.filter(Boolean)).toHaveLength(1);
      expect((await s.store.accounts.byUserName(`user${i}`))!.id).toBe(made[0] ? `a-${i}` : `b-${i}`);
    }
  });

  it('finds by id and user name, lists oldest first, changes state, deletes once', async () => {
    await s.store.accounts.insert(account('acc-z', 'zed', NOW - 2));
    await s.store.accounts.insert(account('acc-y', 'yan', NOW - 2));
    expect(await s.other.accounts.byId('acc-z')).toEqual(account('acc-z', 'zed', NOW - 2));
    expect(await s.other.accounts.byUserName('nobody')).toBeUndefined();
    expect((await s.store.accounts.list()).slice(0, 2).map((a) => a.id)).toEqual(['acc-y', 'acc-z']);
    expect(await s.store.accounts.setState('acc-z', 'disabled')).toBe(true);
    expect((await s.other.accounts.byId('acc-z'))!.state).toBe('disabled');
    expect(await s.store.accounts.setState('acc-none', 'disabled')).toBe(false);
    const deleted = await Promise.all([s.store.accounts.delete('acc-z'), s.other.accounts.delete('acc-z')]);
    expect(deleted.filter(Boolean)).toHaveLength(1);
  });
});

describe.each(BACKENDS)('API key store on $name', (backend) => {
  const s = useStores(backend);

  it('finds a key by hash, lists oldest first, and revokes once', async () => {
    await s.store.apiKeys.insert(apiKey('k2', NOW + 2));
    await s.store.apiKeys.insert(apiKey('k1', NOW + 1));
    expect(await s.other.apiKeys.byHash('hash-k1')).toEqual(apiKey('k1', NOW + 1));
    expect(await s.other.apiKeys.byHash('hash-none')).toBeUndefined();
    expect((await s.store.apiKeys.list()).map((k) => k.id)).toEqual(['k1', 'k2']);
    const revoked = await Promise.all([s.store.apiKeys.revoke('k1', NOW + 5), s.other.apiKeys.revoke('k1', NOW + 6)]);
    expect(revoked.filter(Boolean)).toHaveLength(1);
    expect((await s.store.apiKeys.byHash('hash-k1'))!.revokedAt).toBeOneOf([NOW + 5, NOW + 6]);
    await expect(s.store.apiKeys.insert(apiKey('k1'))).rejects.toThrow();
  });
});
