import { describe, expect, it } from 'vitest';
import { BACKENDS, useStores } from '../helpers/backends.js';

// WrittenResultStore (src/store/written-result-store.ts) on every backend: the results a node with its streams
// in memory had written to its pages at a clean stop, by publish key, read back by the replay after its restart
// until they expire, then purged.

const NOW = 1_700_000_000_000;

describe.each(BACKENDS)('written result store on $name', (backend) => {
  const s = useStores(backend);

  it('tells which keys are kept and unexpired; a key kept again takes the new expiry', async () => {
    await s.store.writtenResults.remember([
      { key: 'r-one', expiresAt: NOW + 10 },
      { key: 'r-two', expiresAt: NOW + 20 },
    ]);
    expect(await s.other.writtenResults.writtenAmong(['r-one', 'r-two', 'r-three'], NOW)).toEqual(new Set(['r-one', 'r-two']));
    expect(await s.store.writtenResults.writtenAmong(['r-one', 'r-two'], NOW + 15)).toEqual(new Set(['r-two']));
    expect(await s.store.writtenResults.writtenAmong([], NOW)).toEqual(new Set());
    // A second stop before the first's keys expired (a restart, then another).
    await s.store.writtenResults.remember([{ key: 'r-one', expiresAt: NOW + 30 }]);
    expect(await s.store.writtenResults.writtenAmong(['r-one'], NOW + 25)).toEqual(new Set(['r-one']));
  });

  it('many keys at once (more than one statement holds); the purge removes only the expired', async () => {
    const keys = Array.from({ length: 1_200 }, (_, i) => `r-${i}`);
    await s.store.writtenResults.remember(keys.map((key, i) => ({ key, expiresAt: NOW + (i % 2 === 0 ? 10 : 1_000) })));
    expect((await s.store.writtenResults.writtenAmong(keys, NOW)).size).toBe(1_200);
    expect(await s.store.writtenResults.deleteExpired(NOW + 11)).toBe(600);
    const left = await s.store.writtenResults.writtenAmong(keys, NOW);
    expect(left.size).toBe(600);
    expect(left.has('r-1') && !left.has('r-0')).toBe(true);
  });
});
