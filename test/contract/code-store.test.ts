import { describe, expect, it } from 'vitest';
import { StoreValueError } from '../../src/store/sql/column-rules.js';
import { MARKS_PER_CALL, type Callback, type LoginCode } from '../../src/store/stores.js';
import { BACKENDS, useStores } from '../helpers/backends.js';

// CodeStore (src/store/stores.ts) on every backend: QR login codes, their single use, and the callback
// stored with a backend-mode settlement.

const NOW = 1_700_000_000_000;

const code = (id: string, over: Partial<LoginCode> = {}): LoginCode => ({
  code: id, tabId: 'tab-1234', sessionHash: 'h', origin: 'https://a.example', purpose: `purpose ${id}`, propertyFilter: 'A,B',
  attachmentFilter: null, serviceId: '', agentApiTimeout: 60, nonce: 'n', createdAt: NOW, expiresAt: NOW + 300_000, state: 'pending',
  legalId: null, signedAt: null, scanSeconds: null, fetchedAt: null, bindingHash: null, ...over,
});

const callback = (id: string): Callback => ({
  id, serviceId: 'svc', tabId: 'tab-1234', tabSession: 'h', url: 'https://backend.example/cb', body: '{}', webhookSecret: null,
  state: 'pending', attempts: 0, nextAttemptAt: NOW, deadline: NOW + 3_600_000, lastError: null, createdAt: NOW, deliveredAt: null,
});

describe.each(BACKENDS)('code store on $name', (backend) => {
  const s = useStores(backend);

  it('stores every code of a concurrent burst, each readable with all its fields', async () => {
    const ids = Array.from({ length: 50 }, (_, i) => `burst-${i}`);
    await Promise.all(ids.map((id, i) => (i % 2 ? s.store : s.other).codes.insert(code(id))));
    for (const id of ids) expect(await s.store.codes.get(id)).toEqual(code(id));
  });

  it('a duplicate in a burst fails alone; its neighbours are stored', async () => {
    await s.store.codes.insert(code('taken'));
    const results = await Promise.allSettled([s.store.codes.insert(code('n1')), s.store.codes.insert(code('taken')), s.store.codes.insert(code('n2'))]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(await s.store.codes.get('n1')).toBeDefined();
    expect(await s.store.codes.get('n2')).toBeDefined();
  });

  it('two nodes using one code at once: exactly one wins, every time', async () => {
    const ids = Array.from({ length: 20 }, (_, i) => `race-${i}`);
    await Promise.all(ids.map((id) => s.store.codes.insert(code(id))));
    for (const id of ids) {
      const wins = await Promise.all([
        s.store.codes.settle(id, { state: 'approved', legalId: 'legal-a', now: NOW + 1 }),
        s.other.codes.settle(id, { state: 'rejected', legalId: 'legal-b', now: NOW + 1 }),
      ]);
      expect(wins.filter(Boolean)).toHaveLength(1);
      const settled = await s.store.codes.get(id);
      expect(settled!.state).toBe(wins[0] ? 'approved' : 'rejected');
      expect(settled!.legalId).toBe(wins[0] ? 'legal-a' : 'legal-b');
    }
  });

  it('backend mode: the callback exists exactly when the settlement won, also when two nodes race', async () => {
    const ids = Array.from({ length: 10 }, (_, i) => `be-${i}`);
    await Promise.all(ids.map((id) => s.store.codes.insert(code(id, { serviceId: 'svc' }))));
    for (const id of ids) {
      const wins = await Promise.all(
        [s.store, s.other].map((node, n) =>
          node.codes.settle(id, { state: 'approved', legalId: `legal-${n}`, now: NOW + 1, callback: { callback: callback(`cb-${id}-${n}`) } }),
        ),
      );
      expect(wins.filter(Boolean)).toHaveLength(1);
      const stored = await Promise.all([0, 1].map((n) => s.store.callbacks.get(`cb-${id}-${n}`)));
      expect(stored.map((c) => c !== undefined)).toEqual(wins);
    }
  });

  it('does not settle an expired or an already settled code', async () => {
    await s.store.codes.insert(code('old', { expiresAt: NOW }));
    expect(await s.store.codes.settle('old', { state: 'approved', legalId: 'l', now: NOW })).toBe(false);
    await s.store.codes.insert(code('once'));
    expect(await s.store.codes.settle('once', { state: 'approved', legalId: 'l', now: NOW })).toBe(true);
    expect(await s.other.codes.settle('once', { state: 'approved', legalId: 'l', now: NOW })).toBe(false);
    expect(await s.store.codes.settle('missing', { state: 'approved', legalId: 'l', now: NOW })).toBe(false);
  });

  it('keeps the scan limit of a code, and binds it once: of two nodes binding at once exactly one wins, every time', async () => {
    await s.store.codes.insert(code('scan-kept', { scanSeconds: 5 }));
    expect(await s.other.codes.get('scan-kept')).toEqual(code('scan-kept', { scanSeconds: 5 }));
    const ids = Array.from({ length: 20 }, (_, i) => `bind-${i}`);
    await Promise.all(ids.map((id) => s.store.codes.insert(code(id, { scanSeconds: 5 }))));
    for (const id of ids) {
      const wins = await Promise.all([s.store.codes.bind(id, 'a'.repeat(64), NOW + 1), s.other.codes.bind(id, 'b'.repeat(64), NOW + 2)]);
      expect(wins.filter(Boolean)).toHaveLength(1);
      const bound = await s.store.codes.get(id);
      expect(bound!.bindingHash).toBe(wins[0] ? 'a'.repeat(64) : 'b'.repeat(64));
      expect(bound!.fetchedAt).toBe(wins[0] ? NOW + 1 : NOW + 2);
      // Bound for good: a later fetch does not take it over.
      expect(await s.other.codes.bind(id, 'c'.repeat(64), NOW + 3)).toBe(false);
    }
  });

  it('does not bind an expired, a settled or a missing code', async () => {
    await s.store.codes.insert(code('bind-old', { expiresAt: NOW, scanSeconds: 5 }));
    expect(await s.store.codes.bind('bind-old', 'a'.repeat(64), NOW)).toBe(false);
    await s.store.codes.insert(code('bind-used', { scanSeconds: 5 }));
    expect(await s.store.codes.settle('bind-used', { state: 'approved', legalId: 'l', now: NOW })).toBe(true);
    expect(await s.store.codes.bind('bind-used', 'a'.repeat(64), NOW)).toBe(false);
    expect(await s.store.codes.bind('bind-missing', 'a'.repeat(64), NOW)).toBe(false);
    expect((await s.store.codes.get('bind-used'))!.bindingHash).toBeNull();
  });

  it("recentTabEvents: the events a session's tab was sent since a time, oldest first, not another session's", async () => {
    const tab = 'tab-events';
    for (const [id, session, at] of [['e1', 's1', 10], ['e2', 's1', 20], ['e3', 's2', 30], ['e4', 's1', 5]] as const) {
      await s.store.codes.insert(code(id, { tabId: tab, sessionHash: session }));
      await s.store.codes.settle(id, { state: 'approved', legalId: 'l', now: NOW + at, tabEvent: { type: 'SignatureReceived', data: { id } } });
    }
    const events = await s.other.codes.recentTabEvents(tab, 's1', NOW + 10);
    expect(events).toEqual([
      { code: 'e1', signedAt: NOW + 10, event: { type: 'SignatureReceived', data: { id: 'e1' } } },
      { code: 'e2', signedAt: NOW + 20, event: { type: 'SignatureReceived', data: { id: 'e2' } } },
    ]);
  });

  it('the result outbox: a settlement with a tab event is owed until marked published; one without never is', async () => {
    const owedAt = NOW + 5_000;
    await s.store.codes.insert(code('owed-1', { tabId: 'tab-owed', sessionHash: 's1' }));
    await s.store.codes.insert(code('owed-2', { tabId: 'tab-owed', sessionHash: 's1' }));
    await s.store.codes.insert(code('no-event', { tabId: '' }));
    await s.store.codes.insert(code('still-pending', { tabId: 'tab-owed', sessionHash: 's1' }));
    await s.store.codes.settle('owed-2', { state: 'rejected', legalId: 'l', now: owedAt + 2, tabEvent: { type: 'SignatureRejected', data: { n: 2 } } });
    await s.store.codes.settle('owed-1', { state: 'approved', legalId: 'l', now: owedAt + 1, tabEvent: { type: 'SignatureReceived', data: { n: 1 } } });
    await s.store.codes.settle('no-event', { state: 'approved', legalId: 'l', now: owedAt + 1 });
    // Oldest first; the window's end is exclusive; another node sees the same rows.
    expect(await s.other.codes.unpublished(owedAt, owedAt + 3, 10)).toEqual([
      { code: 'owed-1', tabId: 'tab-owed', sessionHash: 's1', signedAt: owedAt + 1, event: { type: 'SignatureReceived', data: { n: 1 } } },
      { code: 'owed-2', tabId: 'tab-owed', sessionHash: 's1', signedAt: owedAt + 2, event: { type: 'SignatureRejected', data: { n: 2 } } },
    ]);
    expect((await s.other.codes.unpublished(owedAt, owedAt + 2, 10)).map((r) => r.code)).toEqual(['owed-1']);
    expect((await s.other.codes.unpublished(owedAt, owedAt + 3, 1)).map((r) => r.code)).toEqual(['owed-1']);
    expect(await s.store.codes.get('owed-1')).toMatchObject({ tabEvent: { type: 'SignatureReceived', data: { n: 1 } }, published: false });
    await s.other.codes.markPublished(['owed-1'], owedAt + 10);
    expect((await s.store.codes.unpublished(owedAt, owedAt + 3, 10)).map((r) => r.code)).toEqual(['owed-2']);
    expect(await s.store.codes.get('owed-1')).toMatchObject({ published: true });
    expect(await s.store.codes.get('no-event')).toMatchObject({ published: true });
    expect(await s.store.codes.get('no-event')).not.toHaveProperty('tabEvent');
  });

  it('marks up to MARKS_PER_CALL codes published in one call, any number below it too, and refuses more', async () => {
    const at = NOW + 6_000;
    const codes = Array.from({ length: MARKS_PER_CALL + 1 }, (_, i) => `many-owed-${i}`);
    for (const c of codes) {
      await s.store.codes.insert(code(c, { tabId: 'tab-many-owed', sessionHash: 's1' }));
      await s.store.codes.settle(c, { state: 'approved', legalId: 'l', now: at, tabEvent: { type: 'SignatureReceived', data: {} } });
    }
    const owed = async () => (await s.store.codes.unpublished(at, at + 1, 100)).map((r) => r.code).sort();
    await expect(s.other.codes.markPublished(codes, at + 1)).rejects.toThrow(RangeError);
    expect(await owed()).toHaveLength(MARKS_PER_CALL + 1);
    await s.other.codes.markPublished(codes.slice(0, 3), at + 1);
    expect(await owed()).toEqual(codes.slice(3).sort());
    // A full list, with codes marked already among it: those keep their mark.
    await s.other.codes.markPublished(codes.slice(1, MARKS_PER_CALL + 1), at + 2);
    expect(await owed()).toEqual([]);
    expect(await s.store.codes.get(codes[0]!)).toMatchObject({ published: true });
    await s.other.codes.markPublished([], at + 3);
  });

  it('recentTabEvents gives at most 20 events, the oldest first, for a tab with more', async () => {
    const tab = 'tab-many-events';
    for (let i = 0; i < 25; i++) {
      await s.store.codes.insert(code(`many-${i}`, { tabId: tab, sessionHash: 's1' }));
      await s.store.codes.settle(`many-${i}`, { state: 'approved', legalId: 'l', now: NOW + 100 + i, tabEvent: { type: 'SignatureReceived', data: { i } } });
    }
    const events = await s.other.codes.recentTabEvents(tab, 's1', NOW + 102);
    expect(events.map((e) => e.signedAt)).toEqual(Array.from({ length: 20 }, (_, i) => NOW + 102 + i));
  });

  it('deleteExpired removes exactly the codes that expired before the time', async () => {
    await s.store.codes.insert(code('exp-a', { expiresAt: 1_000 }));
    await s.store.codes.insert(code('exp-b', { expiresAt: 2_000 }));
    expect(await s.store.codes.deleteExpired(2_000)).toBe(1);
    expect(await s.store.codes.get('exp-a')).toBeUndefined();
    expect(await s.store.codes.get('exp-b')).toBeDefined();
  });

  it('deleteExpired deletes more expired codes than one slice holds, and counts them all', async () => {
    await s.store.codes.deleteExpired(100_000); // what earlier tests left, all expired before these
    const expired = Array.from({ length: 4_500 }, (_, i) => code(`bulk-${i}`, { expiresAt: 100_000 + i }));
    await Promise.all(expired.map((c) => s.store.codes.insert(c)));
    await s.store.codes.insert(code('bulk-live', { expiresAt: 200_000 }));
    expect(await s.store.codes.deleteExpired(150_000)).toBe(4_500);
    expect(await s.store.codes.get('bulk-0')).toBeUndefined();
    expect(await s.store.codes.get('bulk-4499')).toBeUndefined();
    expect(await s.store.codes.get('bulk-live')).toBeDefined();
    expect(await s.store.codes.deleteExpired(150_000)).toBe(0);
  });

  it('refuses what the columns cannot hold on every backend: 1.5 s as agentApiTimeout, a 65-character tab id', async () => {
    await expect(s.store.codes.insert(code('frac', { agentApiTimeout: 1.5 }))).rejects.toBeInstanceOf(StoreValueError);
    await expect(s.store.codes.insert(code('long', { tabId: 't'.repeat(65) }))).rejects.toThrow(/codes.tab_id holds at most 64/);
    expect(await s.store.codes.get('frac')).toBeUndefined();
    // Characters, not UTF-16 units: 64 astral characters fit varchar(64).
    await s.store.codes.insert(code('astral', { tabId: '😀'.repeat(64) }));
    expect((await s.store.codes.get('astral'))!.tabId).toBe('😀'.repeat(64));
  });
});
