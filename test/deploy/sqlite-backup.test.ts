import { existsSync } from 'node:fs';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore } from '../../src/store/open.js';
import { makeIdentity, startService, type TestService } from '../helpers/service.js';

/**
 * docs/deployment.md "Backups": the online backup it tells operators to run on the SQLite file of a running
 * node. The sqlite3 shell runs the same SQL on its own connection; here a second connection in this process
 * does, on the file the service holds open in WAL mode.
 */

let service: TestService;

beforeAll(async () => {
  service = await startService();
});
afterAll(async () => service.close());

describe('online backup of the SQLite file', () => {
  it('VACUUM INTO beside the running service copies every committed write into one file that opens as a store', async () => {
    const file = join(service.dir, 'tabwire.sqlite');
    const ada = await makeIdentity(service, { FIRST: 'Ada' });
    // Committed, and the service runs in WAL mode: the write may be only in tabwire.sqlite-wal so far.
    expect(existsSync(`${file}-wal`)).toBe(true);

    const copy = join(service.dir, 'backup.sqlite');
    const reader = new SQLite(file, { readonly: true });
    reader.pragma('busy_timeout = 5000');
    reader.prepare('VACUUM INTO ?').run(copy);
    reader.close();

    // The service went on working meanwhile (a backup holds a read transaction only).
    const bob = await makeIdentity(service, { FIRST: 'Bob' });
    expect(await service.store.identities.get(bob.identity.id)).toBeDefined();

    // The copy is whole in itself (no -wal beside it) and is a database the service opens and migrates as is.
    expect(existsSync(`${copy}-wal`)).toBe(false);
    const restored = await openStore({ sqliteFile: copy, databasePoolSize: 1 });
    try {
      expect((await restored.identities.get(ada.identity.id))?.properties).toEqual({ FIRST: 'Ada' });
      expect(await restored.identities.get(bob.identity.id)).toBeUndefined();
    } finally {
      await restored.close();
    }
  });
});
