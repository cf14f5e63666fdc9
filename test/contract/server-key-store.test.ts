import { describe, expect, it } from 'vitest';
import type { ServerKey } from '../../src/store/stores.js';
import { BACKENDS, useStores } from '../helpers/backends.js';

// ServerKeyStore (src/store/stores.ts) on every backend: one key ring per purpose for every node.

const key = (kid: string, purpose: string, createdAt = 1_700_000_000_000): ServerKey => ({
  kid, purpose, privateKey: `-----BEGIN PRIVATE KEY-----\n${kid}\n-----END PRIVATE KEY-----\n`, publicKey: `public ${kid}`, createdAt,
});

describe.each(BACKENDS)('server key store on $name', (backend) => {
  const s = useStores(backend);

  it('two nodes creating the first key of a ring at once: exactly one key is stored, and both read it', async () => {
    for (let round = 0; round < 10; round++) {
      const purpose = `first-${round}`;
      const won = await Promise.all([s.store.serverKeys.insertFirst(key(`a-${round}`, purpose)), s.other.serverKeys.insertFirst(key(`b-${round}`, purpose))]);
      expect(won.filter(Boolean)).toHaveLength(1);
      const [a, b] = await Promise.all([s.store.serverKeys.list(purpose), s.other.serverKeys.list(purpose)]);
      expect(a).toHaveLength(1);
      expect(b).toEqual(a);
      expect(a[0]!.kid).toBe(won[0] ? `a-${round}` : `b-${round}`);
    }
  });

  it('a first key is not stored when the ring has one; rotations come first in the list whatever their clocks say', async () => {
    expect(await s.store.serverKeys.insertFirst(key('r-0', 'ring', 5_000))).toBe(true);
    expect(await s.store.serverKeys.insertFirst(key('r-x', 'ring'))).toBe(false);
    // A node whose clock is behind rotates: its key is still the newest.
    await s.other.serverKeys.insert(key('r-1', 'ring', 1_000));
    await s.store.serverKeys.insert(key('r-2', 'ring', 3_000));
    expect((await s.store.serverKeys.list('ring')).map((k) => k.kid)).toEqual(['r-2', 'r-1', 'r-0']);
    // The same kid again is left as it is.
    await s.store.serverKeys.insert(key('r-1', 'ring'));
    expect((await s.other.serverKeys.list('ring')).map((k) => k.kid)).toEqual(['r-2', 'r-1', 'r-0']);
    expect(await s.store.serverKeys.list('empty')).toEqual([]);
  });

  it('rotations racing on two nodes each get their own place in the ring', async () => {
    await s.store.serverKeys.insertFirst(key('race-0', 'race'));
    const kids = Array.from({ length: 12 }, (_, i) => `race-${i + 1}`);
    await Promise.all(kids.map((kid, i) => (i % 2 ? s.store : s.other).serverKeys.insert(key(kid, 'race'))));
    const ring = await s.store.serverKeys.list('race');
    expect(ring.map((k) => k.kid).sort()).toEqual(['race-0', ...kids].sort());
    expect(ring.at(-1)!.kid).toBe('race-0');
    expect(ring[0]).toEqual(key(ring[0]!.kid, 'race'));
  });
});
