import { describe, expect, it } from 'vitest';
import type { Callback } from '../../src/store/stores.js';
import { BACKENDS, useStores, type Stores } from '../helpers/backends.js';

// CallbackStore (src/store/stores.ts) on every backend: the durable outbox several nodes claim from.

const NOW = 1_700_000_000_000;
const LEASE = 30_000;

const callback = (id: string, over: Partial<Callback> = {}): Callback => ({
  id, serviceId: 'svc', tabId: 'tab-1234', tabSession: 'h', url: 'https://backend.example/cb', body: `{"id":"${id}"}`, webhookSecret: 'whsec_x',
  state: 'pending', attempts: 0, nextAttemptAt: NOW, deadline: NOW + 3_600_000, lastError: null, createdAt: NOW, deliveredAt: null, ...over,
});

describe.each(BACKENDS)('callback store on $name', (backend) => {
  const s = useStores(backend);

  it('inserts a new id once and reads it back whole', async () => {
    expect(await s.store.callbacks.insert(callback('one'))).toBe(true);
    expect(await s.other.callbacks.insert(callback('one', { body: 'other' }))).toBe(false);
    expect(await s.other.callbacks.get('one')).toEqual(callback('one'));
    await s.store.callbacks.remove('one');
    expect(await s.store.callbacks.get('one')).toBeUndefined();
  });

  it('two nodes claiming at once never get one callback twice, and together get them all', async () => {
    const ids = Array.from({ length: 40 }, (_, i) => `claim-${String(i).padStart(2, '0')}`);
    // Due in the past, before every other test's callbacks, so only these are claimed here.
    for (const [i, id] of ids.entries()) await s.store.callbacks.insert(callback(id, { nextAttemptAt: 1_000 + i }));
    const claimed: Callback[] = [];
    const claimer = async (node: Stores['store']) => {
      for (;;) {
        const batch = (await node.callbacks.claimDue(NOW, LEASE, 3)).filter((c) => c.id.startsWith('claim-'));
        if (batch.length === 0) return;
        claimed.push(...batch);
      }
    };
    await Promise.all([claimer(s.store), claimer(s.other), claimer(s.store), claimer(s.other)]);
    expect(claimed.map((c) => c.id).sort()).toEqual(ids);
    // Still leased: nobody gets them again before the lease ends, everyone after.
    expect(await s.other.callbacks.claimDue(NOW + LEASE - 1, LEASE, 100)).toEqual([]);
    const again = await s.other.callbacks.claimDue(NOW + LEASE + 1, LEASE, 100);
    expect(again.map((c) => c.id).sort()).toEqual(ids);
    for (const id of ids) await s.store.callbacks.remove(id);
  });

  it('claims oldest due first, up to the limit, and not what is not due yet or no longer pending', async () => {
    await s.store.callbacks.insert(callback('due-b', { nextAttemptAt: NOW - 10 }));
    await s.store.callbacks.insert(callback('due-a', { nextAttemptAt: NOW - 20 }));
    await s.store.callbacks.insert(callback('later', { nextAttemptAt: NOW + 10 }));
    await s.store.callbacks.insert(callback('done', { nextAttemptAt: NOW - 30 }));
    expect(await s.store.callbacks.markDelivered('done', NOW)).toBe(true);
    const first = await s.store.callbacks.claimDue(NOW, LEASE, 1);
    expect(first.map((c) => c.id)).toEqual(['due-a']);
    const rest = await s.store.callbacks.claimDue(NOW, LEASE, 10);
    expect(rest.map((c) => c.id)).toEqual(['due-b']);
  });

  it('a lease is renewed only by its holder, and a delivery is marked once', async () => {
    await s.store.callbacks.insert(callback('lease', { nextAttemptAt: 0 }), NOW + LEASE);
    expect(await s.store.callbacks.claimDue(NOW, LEASE, 100)).toEqual([]);
    expect(await s.store.callbacks.renewLease('lease', NOW + LEASE, NOW + 2 * LEASE)).toBe(true);
    expect(await s.other.callbacks.renewLease('lease', NOW + LEASE, NOW + 3 * LEASE)).toBe(false);
    const marks = await Promise.all([s.store.callbacks.markDelivered('lease', NOW + 5), s.other.callbacks.markDelivered('lease', NOW + 6)]);
    expect(marks.filter(Boolean)).toHaveLength(1);
    expect(await s.store.callbacks.get('lease')).toMatchObject({ state: 'delivered' });
    expect(await s.store.callbacks.renewLease('lease', NOW + 2 * LEASE, NOW + 3 * LEASE)).toBe(false);
  });

  it('many deliveries marked at once (one group commit) each move their own row once', async () => {
    const ids = Array.from({ length: 150 }, (_, i) => `many-${String(i).padStart(3, '0')}`);
    for (const id of ids) await s.store.callbacks.insert(callback(id, { nextAttemptAt: NOW + 3_600_000 }));
    // One already delivered: marking it again moves nothing.
    expect(await s.store.callbacks.markDelivered(ids[7]!, NOW)).toBe(true);
    // All asked for in one turn, an id twice and an id that does not exist among them.
    const asked = [...ids, ids[3]!, 'many-missing'];
    const marks = await Promise.all(asked.map((id, i) => s.store.callbacks.markDelivered(id, NOW + 10 + (i % 5))));
    const moved = asked.filter((_, i) => marks[i]);
    expect(moved).toEqual(ids.filter((id) => id !== ids[7]));
    for (const id of ids) {
      const stored = await s.store.callbacks.get(id);
      expect(stored?.state).toBe('delivered');
      // Each with its own mark's time (the first mark of an id asked for twice).
      expect(stored?.deliveredAt).toBe(id === ids[7] ? NOW : NOW + 10 + (asked.indexOf(id) % 5));
    }
    for (const id of ids) await s.store.callbacks.remove(id);
  });

  it('reschedule records the attempt and releases the lease; finish ends it; U+0000 in an error text is kept replaced', async () => {
    await s.store.callbacks.insert(callback('retry', { nextAttemptAt: 0 }), NOW + LEASE);
    await s.store.callbacks.reschedule('retry', 1, NOW + 500, 'timeout');
    expect(await s.store.callbacks.get('retry')).toMatchObject({ attempts: 1, nextAttemptAt: NOW + 500, lastError: 'timeout', state: 'pending' });
    expect((await s.store.callbacks.claimDue(NOW + 500, LEASE, 100)).map((c) => c.id)).toContain('retry');
    await s.store.callbacks.finish('retry', 'gone', 2, 'gone\u0000away');
    expect(await s.store.callbacks.get('retry')).toMatchObject({ state: 'gone', attempts: 2, lastError: 'gone\uFFFDaway' });
  });

  it('deleteEnded removes callbacks whose deadline passed, in any state', async () => {
    await s.store.callbacks.insert(callback('end-a', { deadline: 5_000 }));
    await s.store.callbacks.insert(callback('end-b', { deadline: 6_000 }));
    expect(await s.store.callbacks.deleteEnded(6_000)).toBe(1);
    expect(await s.store.callbacks.get('end-a')).toBeUndefined();
    expect(await s.store.callbacks.get('end-b')).toBeDefined();
  });
});
