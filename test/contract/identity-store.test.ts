import { describe, expect, it } from 'vitest';
import type { Identity } from '../../src/store/stores.js';
import { BACKENDS, useStores } from '../helpers/backends.js';

// IdentityStore (src/store/stores.ts) on every backend.

const NOW = 1_700_000_000_000;

const identity = (id: string, over: Partial<Identity> = {}): Identity => ({
  id, provider: 'legal.test', state: 'Created', created: NOW, updated: NOW, from: NOW, to: NOW + 86_400_000,
  properties: { FIRST: 'Ada', LAST: 'Lovelace', NOTE: 'ünïcødé 😀' },
  attachments: [{ id: 'att-1', contentType: 'image/png', fileName: 'a.png', signature: 'c2ln', timestamp: NOW }],
  clientKeyName: 'ed25519', clientPubKey: 'A'.repeat(43) + '=', accountId: 'acc-1', ...over,
});

describe.each(BACKENDS)('identity store on $name', (backend) => {
  const s = useStores(backend);

  it('reads an identity back whole, properties and attachment metadata included', async () => {
    await s.store.identities.insert(identity('id-whole@legal.test'));
    expect(await s.other.identities.get('id-whole@legal.test')).toEqual(identity('id-whole@legal.test'));
    expect(await s.other.identities.get('id-none@legal.test')).toBeUndefined();
  });

  it("lists all or an account's identities oldest first, and pages by (created, id) without gaps", async () => {
    for (const [id, created] of [['p-c', 3], ['p-a', 1], ['p-b', 1], ['p-d', 4]] as const) {
      await s.store.identities.insert(identity(id, { created: NOW + created, accountId: 'acc-page' }));
    }
    expect((await s.store.identities.list('acc-page')).map((i) => i.id)).toEqual(['p-a', 'p-b', 'p-c', 'p-d']);
    const first = await s.store.identities.page('acc-page', 2);
    expect(first.map((i) => i.id)).toEqual(['p-a', 'p-b']);
    const last = first.at(-1)!;
    const second = await s.other.identities.page('acc-page', 2, { created: last.created, id: last.id });
    expect(second.map((i) => i.id)).toEqual(['p-c', 'p-d']);
    expect((await s.store.identities.list()).length).toBeGreaterThanOrEqual(4);
  });

  it('counts by state, and a state moves once when two nodes move it at once', async () => {
    await s.store.identities.insert(identity('t-1', { accountId: 'acc-count' }));
    await s.store.identities.insert(identity('t-2', { accountId: 'acc-count', state: 'Approved' }));
    expect(await s.store.identities.countFor('acc-count', ['Created', 'Approved'])).toBe(2);
    expect(await s.store.identities.countFor('acc-count', [])).toBe(0);
    const moves = await Promise.all([
      s.store.identities.transition('t-1', 'Created', 'Approved', NOW + 1),
      s.other.identities.transition('t-1', 'Created', 'Rejected', NOW + 2),
    ]);
    expect(moves.filter(Boolean)).toHaveLength(1);
    const after = await s.store.identities.get('t-1');
    expect(after!.state).toBe(moves[0] ? 'Approved' : 'Rejected');
    expect(await s.store.identities.countFor('acc-count', ['Created'])).toBe(0);
  });
});
