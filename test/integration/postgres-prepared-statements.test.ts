import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPostgresStore } from '../../src/store/postgres/open.js';
import { PREPARED_PARAMETERS_LIMIT, PREPARED_TEXTS_LIMIT, preparedStatementsPool, StatementNames } from '../../src/store/postgres/prepared-statements.js';
import { postgresDatabase } from '../helpers/backends.js';

/**
 * Statements go to PostgreSQL as named prepared statements (src/store/postgres/prepared-statements.ts,
 * docs/store.md "Prepared statements"): checked on a real server through its own view of the session's
 * prepared statements (`pg_prepared_statements`), with a pool of one connection so every call is that session.
 */
interface T {
  t: { a: number; b?: number };
}

describe('named prepared statements on PostgreSQL', () => {
  let url: string;
  let pool: pg.Pool;
  let names: StatementNames;
  let db: Kysely<T>;

  /** The texts of the statements prepared on the pool's one connection. */
  const prepared = async (): Promise<string[]> => {
    const { rows } = await pool.query<{ statement: string }>('select statement from pg_prepared_statements');
    return rows.map((r) => r.statement);
  };

  beforeAll(async () => {
    url = await postgresDatabase();
    pool = new pg.Pool({ connectionString: url, max: 1 });
    names = new StatementNames();
    db = new Kysely<T>({ dialect: new PostgresDialect({ pool: preparedStatementsPool(pool, names) }) });
    await sql`create table t (a int primary key)`.execute(db);
    await db.insertInto('t').values([{ a: 1 }, { a: 2 }]).execute();
  });

  afterAll(async () => {
    await db.destroy();
  });

  it('prepares a statement once and runs it by name afterwards, with the right rows', async () => {
    const select = db.selectFrom('t').select('a').where('a', '=', 1);
    expect(await select.execute()).toEqual([{ a: 1 }]);
    expect(await db.selectFrom('t').select('a').where('a', '=', 2).execute()).toEqual([{ a: 2 }]);
    const text = select.compile().sql;
    expect((await prepared()).filter((s) => s === text)).toHaveLength(1);
    // DDL and transaction control stay unnamed.
    expect((await prepared()).some((s) => /create table/i.test(s))).toBe(false);
  });

  it('a `select *` whose columns change under it (a migration adds one) is answered unnamed from then on', async () => {
    const all = db.selectFrom('t').selectAll().where('a', '=', 1);
    expect(await all.execute()).toEqual([{ a: 1 }]);
    const before = names.size;
    await sql`alter table t add column b int not null default 7`.execute(db);
    expect(await all.execute()).toEqual([{ a: 1, b: 7 }]);
    expect(names.size).toBe(before - 1);
    expect(await all.execute()).toEqual([{ a: 1, b: 7 }]);
  });

  it('inside a transaction a `*` statement is not named; outside it the same text is', async () => {
    const text = db.selectFrom('t').selectAll().where('a', '>', 0).compile().sql;
    await db.transaction().execute(async (trx) => {
      expect(await trx.selectFrom('t').selectAll().where('a', '>', 0).execute()).toHaveLength(2);
    });
    expect(await prepared()).not.toContain(text);
    await db.selectFrom('t').selectAll().where('a', '>', 0).execute();
    expect(await prepared()).toContain(text);
  });

  it('names at most the documented number of texts, and none with many parameters or that are not DML', () => {
    const bounded = new StatementNames();
    expect(bounded.nameFor('create table x (a int)', 0, false)).toBeUndefined();
    expect(bounded.nameFor('begin', 0, false)).toBeUndefined();
    const many = Array.from({ length: PREPARED_PARAMETERS_LIMIT + 1 }, (_, i) => `$${i + 1}`).join(', ');
    expect(bounded.nameFor(`select 1 where 1 in (${many})`, PREPARED_PARAMETERS_LIMIT + 1, false)).toBeUndefined();
    for (let i = 0; i < PREPARED_TEXTS_LIMIT; i++) expect(bounded.nameFor(`select ${i}`, 0, false)).toBeDefined();
    expect(bounded.nameFor('select -1', 0, false)).toBeUndefined();
    expect(bounded.nameFor('select 0', 0, false)).toBe(bounded.nameFor('select 0', 0, false));
    expect(bounded.size).toBe(PREPARED_TEXTS_LIMIT);
  });

  it('the PostgreSQL store sends its statements named', async () => {
    const storeNames = new StatementNames();
    const store = await openPostgresStore(await postgresDatabase(), { size: 2, statementNames: storeNames });
    try {
      const afterMigrations = storeNames.size;
      expect(await store.codes.get('no-such-code')).toBeUndefined();
      expect(storeNames.size).toBe(afterMigrations + 1);
      expect(await store.codes.get('no-such-code-either')).toBeUndefined();
      expect(storeNames.size).toBe(afterMigrations + 1);
    } finally {
      await store.close();
    }
  });

  it('with `databasePreparedStatements: false` the store names nothing (a pooler that does not keep them)', async () => {
    const storeNames = new StatementNames();
    const store = await openPostgresStore(await postgresDatabase(), { size: 2, preparedStatements: false, statementNames: storeNames });
    try {
      expect(await store.codes.get('no-such-code')).toBeUndefined();
      expect(storeNames.size).toBe(0);
    } finally {
      await store.close();
    }
  });
});
