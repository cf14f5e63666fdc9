import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, SqliteDialect, sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TabwireError } from '../../src/errors.js';
import type { Database } from '../../src/store/schema.js';
import { StoreValueError } from '../../src/store/sql/column-rules.js';
import type { SyncWriter } from '../../src/store/sql/flavour.js';
import { CommitQueue, GroupCommit, type BatchStart, type Write } from '../../src/store/sql/group-commit.js';
import { StatementCache, withStatementCache } from '../../src/store/sqlite/statement-cache.js';
import { sqliteSyncWriter } from '../../src/store/sqlite/sync-writer.js';

// Group commit of the hot-path writes (src/store/sql/group-commit.ts): many writers, one transaction per
// batch, and a failing write must not take its neighbours with it. Every behaviour holds on both paths: a
// batch as a Kysely transaction (PostgreSQL's path) and a batch through SQLite's synchronous writer.

let dir: string;
let sqlite: SQLite.Database;
let db: Kysely<Database>;
/** Transactions begun, on either path. */
let begins: number;
let writer: SyncWriter;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tabwire-group-commit-'));
  sqlite = new SQLite(join(dir, 'db.sqlite'));
  sqlite.pragma('journal_mode = WAL');
  const statements = new StatementCache(sqlite);
  db = new Kysely<Database>({
    dialect: new SqliteDialect({ database: withStatementCache(statements) }),
    log: (event) => {
      if (event.query.sql.toLowerCase() === 'begin') begins++;
    },
  });
  await sql`create table t (id text primary key, n integer not null check (n >= 0))`.execute(db);
  const inner = sqliteSyncWriter(statements);
  writer = {
    run: (text, params) => inner.run(text, params),
    transaction: (work) => {
      begins++;
      return inner.transaction(work);
    },
  };
  begins = 0;
});
afterEach(async () => {
  await db.destroy();
  rmSync(dir, { recursive: true, force: true });
});

const insert = 'insert into t (id, n) values (?, ?)';
const rows = async () => (await sql<{ id: string; n: number }>`select id, n from t order by id`.execute(db)).rows;

describe.each([
  { path: 'Kysely transactions', sync: false },
  { path: 'the synchronous writer', sync: true },
])('CommitQueue through $path', ({ sync }) => {
  const queueOf = (start: BatchStart) => new CommitQueue(db, start, sync ? writer : undefined);

  it('writes of one loop turn share one transaction, and each resolves with its own rows once committed', async () => {
    const queue = queueOf('turn');
    // Two dependent steps, like settling a code and storing its callback: the second runs only if the first changed a row.
    const settle = (id: string): Write => [
      { sql: 'update t set n = n + 1 where id = ? and n = 0', params: [id] },
      { sql: insert, params: [`cb_${id}`, 1] },
    ];
    await sql`insert into t (id, n) values ('a', 0), ('b', 0)`.execute(db);
    begins = 0;
    // Two signatures for `a` race with one for `b`: the first for `a` wins, the second sees it settled.
    const results = await Promise.all([queue.write(settle('a')), queue.write(settle('a')), queue.write(settle('b'))]);
    expect(results).toEqual([[1, 1], [0], [1, 1]]);
    expect(begins).toBe(1);
    expect(await rows()).toEqual([
      { id: 'a', n: 1 },
      { id: 'b', n: 1 },
      { id: 'cb_a', n: 1 },
      { id: 'cb_b', n: 1 },
    ]);
  });

  it('a failing write fails alone: its neighbours commit, none of its own steps stay', async () => {
    const queue = queueOf('turn');
    const good = (id: string) => queue.run(insert, [id, 1]);
    // Writes a row, then breaks the check constraint: all of it must be undone.
    const bad = queue.write([
      { sql: insert, params: ['half', 1] },
      { sql: insert, params: ['broken', -1] },
    ]);
    const settled = await Promise.allSettled([good('x'), bad, good('y')]);
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(await rows()).toEqual([
      { id: 'x', n: 1 },
      { id: 'y', n: 1 },
    ]);
  });

  it('a statement on a shared queue commits in the same transaction as the writes of its turn', async () => {
    const queue = queueOf('turn');
    const statement = new GroupCommit(insert, queue);
    const [write, single] = await Promise.all([queue.write([{ sql: insert, params: ['u', 1] }]), statement.run(['s', 2])]);
    expect([write, single]).toEqual([[1], 1]);
    expect(begins).toBe(1);
    expect(await rows()).toEqual([
      { id: 's', n: 2 },
      { id: 'u', n: 1 },
    ]);
  });

  it('immediate: a lone write goes at once, without a transaction of its own', async () => {
    const statement = new GroupCommit(insert, queueOf('immediate'));
    expect(await statement.run(['z', 3])).toBe(1);
    expect(begins).toBe(0);
    expect(await rows()).toEqual([{ id: 'z', n: 3 }]);
  });

  it('off: every write on its own, several steps in a transaction of their own', async () => {
    const queue = queueOf('off');
    const results = await Promise.all([queue.run(insert, ['p', 1]), queue.write([{ sql: insert, params: ['q', 1] }, { sql: insert, params: ['r', 1] }])]);
    expect(results).toEqual([1, [1, 1]]);
    expect(begins).toBe(1);
    expect((await rows()).map((r) => r.id)).toEqual(['p', 'q', 'r']);
  });

  it('waits for a Kysely transaction in progress instead of writing into it', async () => {
    const queue = queueOf('turn');
    let written: Promise<number> | undefined;
    await expect(
      db.transaction().execute(async (trx) => {
        await sql`insert into t (id, n) values ('in-trx', 1)`.execute(trx);
        written = queue.run(insert, ['queued', 1]);
        // A turn passes while the transaction is open: the queued write must not run inside it.
        await new Promise((resolve) => setImmediate(resolve));
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    expect(await written).toBe(1);
    expect(await rows()).toEqual([{ id: 'queued', n: 1 }]);
  });
});

describe('the synchronous writer (SQLite)', () => {
  it('checks the column rules like every statement through Kysely', () => {
    const compiled = db.insertInto('callbacks').values({ id: 'x'.repeat(65) } as never).compile();
    expect(() => writer.run(compiled, compiled.parameters)).toThrow(StoreValueError);
    expect(() => writer.run(insert, ['nul\u0000', 1])).toThrow(StoreValueError);
  });

  it('answers store_unavailable when another connection holds the write lock', () => {
    const other = new SQLite(join(dir, 'db.sqlite'));
    try {
      sqlite.pragma('busy_timeout = 0');
      other.prepare('begin immediate').run();
      let caught: unknown;
      try {
        writer.run(insert, ['locked', 1]);
      } catch (err) {
        caught = err;
      }
      expect(caught).toBeInstanceOf(TabwireError);
      expect((caught as TabwireError).code).toBe('store_unavailable');
      other.prepare('rollback').run();
      expect(writer.run(insert, ['free', 1])).toBe(1);
    } finally {
      other.close();
    }
  });

  it('rolls a transaction back when its work throws', async () => {
    expect(() =>
      writer.transaction(() => {
        writer.run(insert, ['gone', 1]);
        throw new Error('undo');
      }),
    ).toThrow('undo');
    expect(await rows()).toEqual([]);
  });
});
