import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { openSqliteStore } from '../../src/store/sqlite/open.js';
import { until } from '../helpers/until.js';

const dir = mkdtempSync(join(tmpdir(), 'tabwire-checkpoints-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it('WAL checkpoints happen in the worker: the database file takes what was written without any commit doing it', async () => {
  const file = join(dir, 'store.sqlite');
  const store = await openSqliteStore(file);
  const before = statSync(file).size;
  const now = Date.now();
  for (let i = 0; i < 2_000; i++) {
    await store.codes.insert({
      code: `code-${i}`.padEnd(22, 'x'),
      tabId: 'tab-00000001',
      sessionHash: null,
      origin: null,
      purpose: 'a purpose long enough to fill pages '.repeat(4),
      propertyFilter: null,
      attachmentFilter: null,
      serviceId: '',
      agentApiTimeout: null,
      nonce: 'n'.repeat(32),
      createdAt: now,
      expiresAt: now + 300_000,
      state: 'pending',
      legalId: null,
      signedAt: null,
      scanSeconds: null,
      fetchedAt: null,
      bindingHash: null,
    });
  }
  // Automatic checkpoints are off on the connection that wrote: only the worker moves pages into the file.
  await until(() => statSync(file).size > before + 100_000, 'the worker to checkpoint the WAL into the database file');
  await store.close();
  // The last connection to close checkpoints the rest and removes the WAL.
  expect(() => statSync(`${file}-wal`)).toThrow();
});

it('a WAL grown past its bound under writes that never pause is emptied, and no write fails meanwhile', async () => {
  const file = join(dir, 'truncate.sqlite');
  const store = await openSqliteStore(file);
  const walSize = (): number => {
    try {
      return statSync(`${file}-wal`).size;
    } catch {
      return 0;
    }
  };
  const now = Date.now();
  let largest = 0;
  let emptiedAfterBound = false;
  // Random keys and long rows: each insert adds several KB to the log, so the 32 MiB bound comes soon.
  for (let i = 0; i < 3_000 && !emptiedAfterBound; i++) {
    await Promise.all(
      Array.from({ length: 20 }, (_, k) =>
        store.codes.insert({
          code: `${Math.random().toString(36).slice(2)}${i}-${k}`.padEnd(22, 'x').slice(0, 22),
          tabId: 'tab-00000001',
          sessionHash: null,
          origin: null,
          purpose: 'p'.repeat(2_000),
          propertyFilter: null,
          attachmentFilter: null,
          serviceId: '',
          agentApiTimeout: null,
          nonce: 'n'.repeat(32),
          createdAt: now,
          expiresAt: now + 300_000,
          state: 'pending',
          legalId: null,
          signedAt: null,
          scanSeconds: null,
          fetchedAt: null,
          bindingHash: null,
        }),
      ),
    );
    const size = walSize();
    largest = Math.max(largest, size);
    if (largest > 32 * 1024 * 1024 && size < largest / 4) emptiedAfterBound = true;
  }
  expect(largest).toBeGreaterThan(32 * 1024 * 1024);
  expect(emptiedAfterBound).toBe(true);
  await store.close();
}, 120_000);
