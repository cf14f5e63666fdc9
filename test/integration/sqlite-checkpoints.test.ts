import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { openSqliteStore } from '../../src/store/sqlite/open.js';
import type { LoginCode } from '../../src/store/stores.js';
import { until } from '../helpers/until.js';

const dir = mkdtempSync(join(tmpdir(), 'tabwire-checkpoints-'));

/** A pending code as a QR request stores it; `purpose` sets how much each insert writes. */
const pendingCode = (code: string, purpose: string, now: number): LoginCode => ({
  code,
  tabId: 'tab-00000001',
  sessionHash: null,
  origin: null,
  purpose,
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
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it('WAL checkpoints happen in the worker: the database file takes what was written without any commit doing it', async () => {
  const file = join(dir, 'store.sqlite');
  const store = await openSqliteStore(file);
  const before = statSync(file).size;
  const now = Date.now();
  for (let i = 0; i < 2_000; i++) {
    await store.codes.insert(pendingCode(`code-${i}`.padEnd(22, 'x'), 'a purpose long enough to fill pages '.repeat(4), now));
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
  let n = 0;
  // Random keys and long rows: each insert adds several KB to the log, so the 32 MiB bound comes soon.
  const writeBatch = () =>
    Promise.all(
      Array.from({ length: 20 }, (_, k) =>
        store.codes.insert(pendingCode(`${Math.random().toString(36).slice(2)}${n++}-${k}`.padEnd(22, 'x').slice(0, 22), 'p'.repeat(2_000), now)),
      ),
    );
  for (let batches = 0; walSize() <= 32 * 1024 * 1024 && batches < 5_000; batches++) await writeBatch();
  const largest = walSize();
  expect(largest).toBeGreaterThan(32 * 1024 * 1024);
  // The worker looks at the log once a second: writes go on, a batch at a time, until it has emptied it.
  // A failed write rejects here.
  await until(async () => {
    await writeBatch();
    return walSize() < largest / 4;
  }, 'the worker to empty the log while writes go on', 60_000);
  await store.close();
}, 120_000);
