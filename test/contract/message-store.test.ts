import { describe, expect, it } from 'vitest';
import type { StoredMessage } from '../../src/store/stores.js';
import { BACKENDS, useStores, type Stores } from '../helpers/backends.js';

// MessageStore (src/store/stores.ts) on every backend: the offline mailbox of agent accounts.

const message = (accountId: string, n: number, type = 'chat'): Omit<StoredMessage, 'id'> => ({
  accountId,
  from: `friend${n}@xmpp.test/res`,
  to: `user@agents.xmpp.test`,
  type,
  content: `<message type="${type}"><body>message ${n}</body></message>`,
  createdAt: 1_700_000_000_000 + n,
});

describe.each(BACKENDS)('message store on $name', (backend) => {
  const s = useStores(backend);

  it('pops the oldest first, deletes what it returns, and keeps every field', async () => {
    for (let n = 0; n < 5; n++) expect(await s.store.messages.append(message('acc-order', n), 100)).toBe(true);
    const first = await s.store.messages.pop('acc-order', 3);
    expect(first.map((m) => m.content)).toEqual([0, 1, 2].map((n) => message('acc-order', n).content));
    expect(first[0]).toMatchObject({ ...message('acc-order', 0), id: expect.any(String) });
    expect(typeof first[0]!.createdAt).toBe('number');
    expect(await s.store.messages.count('acc-order')).toBe(2);
    expect((await s.store.messages.pop('acc-order', 10)).map((m) => m.content)).toEqual([3, 4].map((n) => message('acc-order', n).content));
    expect(await s.store.messages.pop('acc-order', 10)).toEqual([]);
  });

  it('refuses an append past the quota and stores nothing', async () => {
    for (let n = 0; n < 3; n++) expect(await s.store.messages.append(message('acc-quota', n), 3)).toBe(true);
    expect(await s.store.messages.append(message('acc-quota', 3), 3)).toBe(false);
    expect(await s.store.messages.count('acc-quota')).toBe(3);
    // Another account has a quota of its own.
    expect(await s.store.messages.append(message('acc-other', 0), 3)).toBe(true);
  });

  it('holds the quota under concurrent appends from two nodes', async () => {
    // Several accounts at once, each filled right up to its quota by appends racing on both nodes: under
    // READ COMMITTED a count-then-insert lets two appends both see quota - 1.
    const quota = 5;
    const accounts = Array.from({ length: 10 }, (_, i) => `acc-race-${i}`);
    const appends = accounts.flatMap((account) =>
      Array.from({ length: 20 }, (_, n) => ({ account, n })),
    ).map(({ account, n }) => (n % 2 === 0 ? s.store : s.other).messages.append(message(account, n), quota).then((ok) => (ok ? account : undefined)));
    const stored = await Promise.all(appends);
    for (const account of accounts) {
      expect(stored.filter((a) => a === account)).toHaveLength(quota);
      expect(await s.store.messages.count(account)).toBe(quota);
    }
  });

  it('two nodes popping one account concurrently never return a message twice and lose none', async () => {
    const total = 60;
    for (let n = 0; n < total; n++) await s.store.messages.append(message('acc-pop', n), 1000);
    const popped: StoredMessage[] = [];
    // Each node pops in small batches until the mailbox is empty, both at once.
    const drain = async (node: Stores['store']) => {
      for (;;) {
        const batch = await node.messages.pop('acc-pop', 4);
        if (batch.length === 0 && (await node.messages.count('acc-pop')) === 0) return;
        popped.push(...batch);
      }
    };
    await Promise.all([drain(s.store), drain(s.other), drain(s.store), drain(s.other)]);
    const ids = popped.map((m) => m.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(popped.map((m) => m.content).sort()).toEqual(Array.from({ length: total }, (_, n) => message('acc-pop', n).content).sort());
  });

  it('refuses a type longer than its column on every backend (PostgreSQL varchar(16))', async () => {
    await expect(s.store.messages.append(message('acc-type', 0, 'x'.repeat(17)), 10)).rejects.toThrow(/offline_messages.type holds at most 16/);
    expect(await s.store.messages.count('acc-type')).toBe(0);
  });
});
