import { describe, expect, it } from 'vitest';
import { BACKENDS, useStores } from '../helpers/backends.js';

// TabStore (src/store/stores.ts) on every backend: which session holds a tab.

const NOW = 1_700_000_000_000;

describe.each(BACKENDS)('tab store on $name', (backend) => {
  const s = useStores(backend);

  it('binds a free tab, rebinds the same session, refuses another session', async () => {
    expect(await s.store.tabs.bind('tab-a', 'session-1', NOW, 'https://a.example')).toBe('created');
    expect(await s.other.tabs.bind('tab-a', 'session-1', NOW)).toBe('bound');
    expect(await s.other.tabs.bind('tab-a', 'session-2', NOW, 'https://b.example')).toBe('conflict');
    expect(await s.store.tabs.bindingOf('tab-a')).toEqual({ session: 'session-1', origin: 'https://a.example' });
    // The same session from another page location takes the new origin.
    expect(await s.store.tabs.bind('tab-a', 'session-1', NOW, 'https://c.example')).toBe('bound');
    expect(await s.other.tabs.bindingOf('tab-a')).toEqual({ session: 'session-1', origin: 'https://c.example' });
    expect(await s.other.tabs.sessionOf('tab-none')).toBeUndefined();
  });

  it('two sessions binding one tab on two nodes at once: one gets it, the other a conflict', async () => {
    for (let i = 0; i < 10; i++) {
      const tab = `tab-race-${i}`;
      const outcomes = await Promise.all([s.store.tabs.bind(tab, 'session-1', NOW), s.other.tabs.bind(tab, 'session-2', NOW)]);
      expect([...outcomes].sort()).toEqual(['conflict', 'created']);
      expect(await s.store.tabs.sessionOf(tab)).toBe(outcomes[0] === 'created' ? 'session-1' : 'session-2');
    }
  });

  it('many pages registering and leaving in one loop turn on one node (one batch): each gets its own outcome', async () => {
    // The first of two sessions in one batch gets the tab; the same session again is `bound`.
    const outcomes = await Promise.all([
      s.store.tabs.bind('tab-batch', 'session-1', NOW),
      s.store.tabs.bind('tab-batch', 'session-2', NOW),
      s.store.tabs.bind('tab-batch', 'session-1', NOW),
      ...Array.from({ length: 50 }, (_, i) => s.store.tabs.bind(`tab-batch-${i}`, `session-b${i}`, NOW)),
    ]);
    expect(outcomes.slice(0, 3)).toEqual(['created', 'conflict', 'bound']);
    expect(outcomes.slice(3).every((o) => o === 'created')).toBe(true);
    await Promise.all([
      s.store.tabs.remove('tab-batch', 'session-2'),
      ...Array.from({ length: 50 }, (_, i) => s.store.tabs.remove(`tab-batch-${i}`, i % 2 === 0 ? `session-b${i}` : 'someone-else')),
    ]);
    expect(await s.other.tabs.sessionOf('tab-batch')).toBe('session-1');
    expect(await s.other.tabs.sessionOf('tab-batch-0')).toBeUndefined();
    expect(await s.other.tabs.sessionOf('tab-batch-1')).toBe('session-b1');
  });

  it('a bind racing a release of the same binding is never a conflict (the row vanished between insert and read)', async () => {
    // Inserts and removals share one batch per loop turn, in call order: the bind's insert finds the row,
    // the removal deletes it, and the bind's read then finds none. The owner must get its tab, not a 4403.
    await s.store.tabs.bind('tab-handover', 'session-1', NOW);
    const [outcome] = await Promise.all([s.store.tabs.bind('tab-handover', 'session-1', NOW), s.store.tabs.remove('tab-handover', 'session-1')]);
    expect(outcome).toBe('created');
    expect(await s.other.tabs.sessionOf('tab-handover')).toBe('session-1');
    // Another session racing the owner's release gets the tab that became free, never a conflict either.
    const [taken] = await Promise.all([s.store.tabs.bind('tab-handover', 'session-2', NOW), s.store.tabs.remove('tab-handover', 'session-1')]);
    expect(taken).toBe('created');
    expect(await s.other.tabs.sessionOf('tab-handover')).toBe('session-2');
  });

  it("removes a binding only for its own session", async () => {
    await s.store.tabs.bind('tab-rm', 'session-1', NOW);
    await s.other.tabs.remove('tab-rm', 'session-2');
    expect(await s.store.tabs.sessionOf('tab-rm')).toBe('session-1');
    await s.other.tabs.remove('tab-rm', 'session-1');
    expect(await s.store.tabs.sessionOf('tab-rm')).toBeUndefined();
  });

  it('purges bindings no live connection refreshed since a time', async () => {
    await s.store.tabs.bind('tab-old', 'session-1', 1_000);
    await s.store.tabs.bind('tab-kept', 'session-1', 1_000);
    await s.other.tabs.refresh(['tab-kept'], 5_000);
    const purged = await s.store.tabs.purgeUnseen(4_000);
    expect(purged).toBeGreaterThanOrEqual(1);
    expect(await s.store.tabs.sessionOf('tab-old')).toBeUndefined();
    expect(await s.store.tabs.sessionOf('tab-kept')).toBe('session-1');
  });

  it('refreshes more tabs than one statement takes', async () => {
    const tabs = Array.from({ length: 1200 }, (_, i) => `tab-many-${i}`);
    for (const tab of tabs) await s.store.tabs.bind(tab, 'session-m', 1_000);
    await s.store.tabs.refresh(tabs, 9_000);
    await s.store.tabs.purgeUnseen(8_000);
    expect(await s.store.tabs.sessionOf(tabs.at(-1)!)).toBe('session-m');
  });
});
