import { describe, expect, it } from 'vitest';
import type { LoginCode, QrRequestRecord } from '../../src/store/stores.js';
import { BACKENDS, useStores } from '../helpers/backends.js';

// QrRequestStore (src/store/qr-request-store.ts) and CodeStore.insertIfAbsent on every backend: a request row is
// stored once whatever the number of nodes meeting it at once, outlives its codes, and is purged after; a derived
// code's first resolution on two nodes at once converges on one row.

const NOW = 1_700_000_000_000;

const request = (id: number, over: Partial<QrRequestRecord> = {}): QrRequestRecord => ({
  id, kid: 'kid-1', tabId: 'tab-1234', sessionHash: 'h', origin: 'https://a.example', purpose: `purpose ${id}`, propertyFilter: 'A,B',
  attachmentFilter: null, serviceId: '', agentApiTimeout: 60, scanSeconds: 2, validityMs: 300_000, createdAt: NOW, expiresAt: NOW + 900_000, ...over,
});

const code = (id: string, nonce: string): LoginCode => ({
  code: id, tabId: 'tab-1234', sessionHash: 'h', origin: null, purpose: 'p', propertyFilter: null, attachmentFilter: null, serviceId: '',
  agentApiTimeout: null, nonce, createdAt: NOW, expiresAt: NOW + 300_000, state: 'pending', legalId: null, signedAt: null,
  scanSeconds: null, fetchedAt: null, bindingHash: null,
});

describe.each(BACKENDS)('QR request store on $name', (backend) => {
  const s = useStores(backend);

  it('stores a request once; every field reads back, ids up to 2^36 - 1', async () => {
    const top = 2 ** 36 - 1;
    expect(await s.store.qrRequests.insertIfAbsent(request(top))).toBe(true);
    expect(await s.store.qrRequests.get(top)).toEqual(request(top));
    expect(await s.store.qrRequests.insertIfAbsent(request(top, { purpose: 'another' }))).toBe(false);
    expect((await s.store.qrRequests.get(top))!.purpose).toBe(`purpose ${top}`);
    expect(await s.store.qrRequests.get(12345)).toBeUndefined();
  });

  it('two nodes inserting one id at once: exactly one stores it, every time', async () => {
    for (let i = 0; i < 20; i++) {
      const id = 1000 + i;
      const stored = await Promise.all([s.store.qrRequests.insertIfAbsent(request(id, { purpose: 'a' })), s.other.qrRequests.insertIfAbsent(request(id, { purpose: 'b' }))]);
      expect(stored.filter(Boolean)).toHaveLength(1);
      expect((await s.other.qrRequests.get(id))!.purpose).toBe(stored[0] ? 'a' : 'b');
    }
  });

  it('extend only moves the expiry later, says whether the row exists; the purge removes only expired rows', async () => {
    await s.store.qrRequests.insertIfAbsent(request(2000, { expiresAt: NOW + 10 }));
    await s.store.qrRequests.insertIfAbsent(request(2001, { expiresAt: NOW + 20 }));
    expect(await s.store.qrRequests.extend(2000, NOW + 50)).toBe(true);
    expect(await s.store.qrRequests.extend(2000, NOW + 30)).toBe(true);
    expect((await s.store.qrRequests.get(2000))!.expiresAt).toBe(NOW + 50);
    expect(await s.store.qrRequests.extend(2999, NOW + 50)).toBe(false);
    expect(await s.store.qrRequests.deleteExpired(NOW + 21)).toBeGreaterThanOrEqual(1);
    expect(await s.store.qrRequests.get(2001)).toBeUndefined();
    expect(await s.store.qrRequests.get(2000)).toBeDefined();
  });

  it('a derived code resolved on two nodes at once becomes one row: one insert wins, both read its nonce', async () => {
    for (let i = 0; i < 20; i++) {
      const id = `derived-${i}`;
      const stored = await Promise.all([s.store.codes.insertIfAbsent(code(id, 'from-a')), s.other.codes.insertIfAbsent(code(id, 'from-b'))]);
      expect(stored.filter(Boolean)).toHaveLength(1);
      expect((await s.store.codes.get(id))!.nonce).toBe(stored[0] ? 'from-a' : 'from-b');
    }
  });
});
