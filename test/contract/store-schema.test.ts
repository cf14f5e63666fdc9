import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, Migrator, PostgresDialect, SqliteDialect, sql } from 'kysely';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import type { Identity } from '../../src/store/stores.js';
import { generateEd25519 } from '../../src/identity/keys.js';
import { migrationProvider } from '../../src/store/migrations.js';
import { openPostgresStore } from '../../src/store/postgres/open.js';
import { COLUMN_RULES, StoreValueError } from '../../src/store/sql/column-rules.js';
import { openSqliteStore } from '../../src/store/sqlite/open.js';
import { BACKENDS, postgresDatabase } from '../helpers/backends.js';

// The schema itself: the column rules match what PostgreSQL enforces, migrations run safely when several
// nodes start at once, and the key ring migration numbers existing keys the same on every backend.

const dir = mkdtempSync(join(tmpdir(), 'tabwire-schema-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('column rules', () => {
  it('are exactly the column types PostgreSQL reports for the migrated schema', async () => {
    const url = await postgresDatabase();
    await (await openPostgresStore(url, { size: 1 })).close();
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    const { rows } = await client.query<{ table_name: string; column_name: string; data_type: string; character_maximum_length: number | null }>(
      "select table_name, column_name, data_type, character_maximum_length from information_schema.columns where table_schema = 'public' and table_name not like 'kysely%'",
    );
    await client.end();
    const reported: Record<string, Record<string, unknown>> = {};
    for (const r of rows) {
      (reported[r.table_name] ??= {})[r.column_name] =
        r.data_type === 'character varying' ? { kind: 'varchar', max: r.character_maximum_length } : { kind: r.data_type };
    }
    expect(reported).toEqual(COLUMN_RULES);
  });

  it.each(BACKENDS)('refuse U+0000 in any parameter, reads included, on $name', async (backend) => {
    const s = await backend.open();
    try {
      await expect(s.store.accounts.byUserName('a\u0000b')).rejects.toBeInstanceOf(StoreValueError);
      await expect(s.store.tabs.bind('tab-nul-1', 'session\u0000', 1)).rejects.toBeInstanceOf(StoreValueError);
      expect(await s.store.tabs.sessionOf('tab-nul-1')).toBeUndefined();
    } finally {
      await s.close();
    }
  });
});

describe('migrations', () => {
  it('six nodes starting at once on a new PostgreSQL database, each with a pool of one: all start, each migration ran once', async () => {
    const url = await postgresDatabase();
    const stores = await Promise.all(Array.from({ length: 6 }, () => openPostgresStore(url, { size: 1 })));
    await Promise.all(stores.map((s) => s.close()));
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    const { rows } = await client.query<{ name: string }>('select name from kysely_migration order by name');
    await client.end();
    expect(rows.map((r) => r.name)).toEqual(Object.keys(await migrationProvider.getMigrations()).sort());
  });

  const before = '0008_qr_insert_index';
  const oldKeys = [
    ['k-c', 'jwt', 3_000],
    ['k-a', 'jwt', 1_000],
    ['k-b2', 'jwt', 2_000],
    ['k-b1', 'jwt', 2_000],
    ['r-1', 'result', 9_000],
  ] as const;

  /** Migrates to just before the key ring migration, stores keys as an older version did, then opens the store. */
  async function upgrade(db: Kysely<any>, open: () => Promise<{ list: (p: string) => Promise<string[]>; close: () => Promise<void> }>) {
    const { error } = await new Migrator({ db, provider: migrationProvider }).migrateTo(before);
    expect(error).toBeUndefined();
    for (const [kid, purpose, at] of oldKeys) {
      await sql`insert into server_keys (kid, purpose, private_key, public_key, created_at) values (${kid}, ${purpose}, 'p', 'q', ${at})`.execute(db);
    }
    await db.destroy();
    const store = await open();
    try {
      expect(await store.list('jwt')).toEqual(['k-c', 'k-b2', 'k-b1', 'k-a']);
      expect(await store.list('result')).toEqual(['r-1']);
    } finally {
      await store.close();
    }
  }

  it('numbers keys stored before the key ring by creation time, ties by kid, on SQLite', async () => {
    const file = join(dir, 'upgrade.sqlite');
    await upgrade(new Kysely({ dialect: new SqliteDialect({ database: new SQLite(file) }) }), async () => {
      const store = await openSqliteStore(file);
      return { list: async (p) => (await store.serverKeys.list(p)).map((k) => k.kid), close: () => store.close() };
    });
  });

  it('numbers keys stored before the key ring by creation time, ties by kid, on PostgreSQL', async () => {
    const url = await postgresDatabase();
    await upgrade(new Kysely({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: url, max: 1 }) }) }), async () => {
      const store = await openPostgresStore(url, { size: 2 });
      return { list: async (p) => (await store.serverKeys.list(p)).map((k) => k.kid), close: () => store.close() };
    });
  });
});

describe('identities stored before keys were checked', () => {
  const neutral = `AQ${'A'.repeat(41)}=`; // the neutral point: of small order
  const nonCanonical = Buffer.from('f0ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f', 'hex').toString('base64'); // y = p + 3
  const real = generateEd25519().publicKey;

  /** Migrates to just before the key check, stores identities as an older version did, then opens the store. */
  async function upgrade(db: Kysely<any>, open: () => Promise<{ get: (id: string) => Promise<Identity | undefined>; close: () => Promise<void> }>) {
    const { error } = await new Migrator({ db, provider: migrationProvider }).migrateTo('0010_code_scan_freshness');
    expect(error).toBeUndefined();
    for (const [id, key] of [['real', real], ['neutral', neutral], ['non-canonical', nonCanonical]] as const) {
      await sql`insert into identities (id, provider, state, created_at, updated_at, valid_from, valid_to, properties, attachments, client_key_name, client_pub_key)
        values (${id}, 'legal.test', 'Approved', 1, 1, 1, 9999999999999, '{}', '[]', 'ed25519', ${key})`.execute(db);
    }
    await db.destroy();
    const store = await open();
    try {
      // Marked, not deleted: both bad ones are still there, approved as before, and say why they cannot sign.
      expect(await store.get('real')).not.toHaveProperty('keyProblem');
      expect(await store.get('neutral')).toMatchObject({ state: 'Approved', keyProblem: 'small_order' });
      expect(await store.get('non-canonical')).toMatchObject({ state: 'Approved', keyProblem: 'non_canonical' });
    } finally {
      await store.close();
    }
  }

  it('are marked by the migration on SQLite', async () => {
    const file = join(dir, 'keys.sqlite');
    await upgrade(new Kysely({ dialect: new SqliteDialect({ database: new SQLite(file) }) }), async () => {
      const store = await openSqliteStore(file);
      return { get: (id) => store.identities.get(id), close: () => store.close() };
    });
  });

  it('are marked by the migration on PostgreSQL', async () => {
    const url = await postgresDatabase();
    await upgrade(new Kysely({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: url, max: 1 }) }) }), async () => {
      const store = await openPostgresStore(url, { size: 2 });
      return { get: (id) => store.identities.get(id), close: () => store.close() };
    });
  });
});
