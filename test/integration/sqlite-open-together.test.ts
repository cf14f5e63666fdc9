import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { afterAll, expect, it } from 'vitest';
import { openSqliteStore } from '../../src/store/sqlite/open.js';

/**
 * Several nodes started together on one new SQLite file (`scripts/cluster --store sqlite`): the switch to
 * WAL needs the file to itself, and SQLite refuses it at once (SQLITE_BUSY, no busy wait) while another
 * connection holds a write lock, as a node that is switching or migrating at the same moment does. Here
 * the other connection holds its lock until the store's first attempt has been refused.
 */
const dir = mkdtempSync(join(tmpdir(), 'tabwire-open-together-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it('a store opened while another connection holds the new file locked waits for it, then opens in WAL mode', async () => {
  const file = join(dir, 'shared.sqlite');
  const other = new SQLite(file);
  other.exec('CREATE TABLE elsewhere (x INTEGER)');
  other.exec('BEGIN IMMEDIATE');
  other.exec('INSERT INTO elsewhere VALUES (1)');
  // The same switch from another connection is refused at once: what the store's first attempt meets.
  const probe = new SQLite(file);
  expect(() => probe.pragma('journal_mode = WAL')).toThrow(expect.objectContaining({ code: 'SQLITE_BUSY' }));
  probe.close();

  // Its first attempt runs before openSqliteStore's first await, so it is refused by now.
  let settled = false;
  const opening = openSqliteStore(file).finally(() => (settled = true));
  await new Promise((resolve) => setImmediate(resolve));
  expect(settled).toBe(false);
  other.exec('COMMIT');

  const store = await opening;
  try {
    // WAL is recorded in the file: a connection opened now finds it.
    const after = new SQLite(file, { readonly: true });
    expect(after.pragma('journal_mode', { simple: true })).toBe('wal');
    after.close();
    // Migrated and usable.
    expect(await store.tabs.sessionOf('tab-00000001')).toBeUndefined();
  } finally {
    await store.close();
    other.close();
  }
});
