import SQLite from 'better-sqlite3';
import { Kysely, SqliteDialect, sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Database } from '../../src/store/schema.js';
import { CommitQueue, GroupCommit, rowsChanged } from '../../src/store/sql/group-commit.js';

// Group commit of the outbox's writes (src/store/sql/group-commit.ts): many writers, one transaction
// per loop turn, and a failing write must not take its neighbours with it.

let db: Kysely<Database>;
let statements: string[];

beforeEach(async () => {
  statements = [];
  db = new Kysely<Database>({
    dialect: new SqliteDialect({ database: new SQLite(':memory:') }),
    log: (event) => void statements.push(event.query.sql.toLowerCase()),
  });
  await sql`create table t (id text primary key, n integer not null check (n >= 0))`.execute(db);
  statements = [];
});
afterEach(async () => {
  await db.destroy();
});

const insert = 'insert into t (id, n) values (?, ?)';
const rows = async () => (await sql<{ id: string; n: number }>`select id, n from t order by id`.execute(db)).rows;
const begins = () => statements.filter((s) => s === 'begin').length;

describe('CommitQueue', () => {
  it('units of one loop turn share one transaction, and each resolves with its own result once committed', async () => {
    const queue = new CommitQueue(db, 'turn');
    // A unit of two dependent statements, like settling a code and storing its callback.
    const settle = (id: string) =>
      queue.unit(async (trx) => {
        if ((await rowsChanged(trx, 'update t set n = n + 1 where id = ? and n = 0', [id])) !== 1) return false;
        await rowsChanged(trx, insert, [`cb_${id}`, 1]);
        return true;
      });
    await sql`insert into t (id, n) values ('a', 0), ('b', 0)`.execute(db);
    statements = [];
    // Two signatures for `a` race with one for `b`: the first for `a` wins, the second sees it settled.
    const results = await Promise.all([settle('a'), settle('a'), settle('b')]);
    expect(results).toEqual([true, false, true]);
    expect(begins()).toBe(1);
    expect(await rows()).toEqual([
      { id: 'a', n: 1 },
      { id: 'b', n: 1 },
      { id: 'cb_a', n: 1 },
      { id: 'cb_b', n: 1 },
    ]);
  });

  it('a failing unit fails alone: its neighbours commit, none of its own writes stay', async () => {
    const queue = new CommitQueue(db, 'turn');
    const good = (id: string) => queue.unit(async (trx) => rowsChanged(trx, insert, [id, 1]));
    // Writes a row, then breaks the check constraint: all of it must be undone.
    const bad = queue.unit(async (trx) => {
      await rowsChanged(trx, insert, ['half', 1]);
      return rowsChanged(trx, insert, ['broken', -1]);
    });
    const settled = await Promise.allSettled([good('x'), bad, good('y')]);
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(await rows()).toEqual([
      { id: 'x', n: 1 },
      { id: 'y', n: 1 },
    ]);
  });

  it('a statement on a shared queue commits in the same transaction as the units of its turn', async () => {
    const queue = new CommitQueue(db, 'turn');
    const statement = new GroupCommit(db, insert, queue);
    const [unit, single] = await Promise.all([queue.unit(async (trx) => rowsChanged(trx, insert, ['u', 1])), statement.run(['s', 2])]);
    expect([unit, single]).toEqual([1, 1]);
    expect(begins()).toBe(1);
    expect(await rows()).toEqual([
      { id: 's', n: 2 },
      { id: 'u', n: 1 },
    ]);
  });

  it('immediate: a lone write goes at once, without a transaction of its own', async () => {
    const statement = new GroupCommit(db, insert, 'immediate');
    expect(await statement.run(['z', 3])).toBe(1);
    expect(begins()).toBe(0);
    expect(await rows()).toEqual([{ id: 'z', n: 3 }]);
  });
});
