import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LoginCode, Store } from '../../src/store/stores.js';
import { openSqliteStore } from '../../src/store/sqlite.js';

const dir = mkdtempSync(join(tmpdir(), 'tabwire-store-'));
let store: Store;
beforeAll(async () => {
  store = await openSqliteStore(join(dir, 'db.sqlite'));
});
afterAll(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

const code = (id: string): LoginCode => ({
  code: id, tabId: 'tab-1234', sessionHash: 'h', origin: 'https://a.example', purpose: `purpose ${id}`, propertyFilter: 'A,B',
  attachmentFilter: null, serviceId: '', agentApiTimeout: 60, nonce: 'n', createdAt: 1, expiresAt: 2, state: 'pending', legalId: null, signedAt: null,
});

describe('code store group commit', () => {
  it('stores every code of a concurrent burst, each readable with all its fields', async () => {
    const ids = Array.from({ length: 50 }, (_, i) => `burst-${i}`);
    await Promise.all(ids.map((id) => store.codes.insert(code(id))));
    for (const id of ids) expect(await store.codes.get(id)).toEqual(code(id));
  });

  it('a duplicate in a batch fails alone; its neighbours are stored', async () => {
    await store.codes.insert(code('taken'));
    const results = await Promise.allSettled([store.codes.insert(code('n1')), store.codes.insert(code('taken')), store.codes.insert(code('n2'))]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(await store.codes.get('n1')).toBeDefined();
    expect(await store.codes.get('n2')).toBeDefined();
  });
});
