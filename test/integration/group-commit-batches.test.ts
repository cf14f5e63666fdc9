import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openPostgresStore } from '../../src/store/postgres/open.js';
import type { Database } from '../../src/store/schema.js';
import { CommitQueue } from '../../src/store/sql/group-commit.js';
import type { Callback, LoginCode } from '../../src/store/stores.js';
import { postgresDatabase } from '../helpers/backends.js';

// Several batches of one commit queue at once (CommitQueue's batchesInFlight), on a real PostgreSQL: a batch
// waiting for its database (here: a row lock another client holds) must not hold back a write that a second
// batch could commit meanwhile, and with one batch in flight it does.

let url: string;
let db: Kysely<Database>;
let blocker: pg.Client;

beforeEach(async () => {
  url = await postgresDatabase();
  db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: url, max: 4 }) }) });
  await sql`create table t (id text primary key, n integer not null)`.execute(db);
  // Another client inserts 'held' and does not commit: a second insert of 'held' waits for its end.
  blocker = new pg.Client({ connectionString: url });
  await blocker.connect();
  await blocker.query('begin');
  await blocker.query(`insert into t (id, n) values ('held', 0)`);
});
afterEach(async () => {
  await blocker.end();
  await db.destroy();
});

const insert = 'insert into t (id, n) values ($1, $2) on conflict (id) do nothing';

/** Resolves once a statement other than the blocker's waits for a lock (pg_stat_activity), polled as the database tells it. */
async function someoneWaitsForALock(): Promise<void> {
  for (;;) {
    const { rows } = await sql<{ waiting: number }>`select count(*)::int as waiting from pg_stat_activity where wait_event_type = 'Lock' and datname = current_database()`.execute(db);
    if (rows[0]!.waiting > 0) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
}

describe('CommitQueue with several batches in flight (PostgreSQL)', () => {
  it('two in flight: a write commits while the batch before it waits for a lock', async () => {
    const queue = new CommitQueue(db, 'immediate', undefined, 2);
    const order: string[] = [];
    const held = queue.run(insert, ['held', 1]).then((n) => (order.push('held'), n));
    await someoneWaitsForALock();
    const free = queue.run(insert, ['free', 2]).then((n) => (order.push('free'), n));
    expect(await free).toBe(1);
    expect(order).toEqual(['free']);
    await blocker.query('rollback');
    expect(await held).toBe(1);
    expect(order).toEqual(['free', 'held']);
    const { rows } = await sql<{ id: string; n: number }>`select id, n from t order by id`.execute(db);
    expect(rows).toEqual([
      { id: 'free', n: 2 },
      { id: 'held', n: 1 },
    ]);
  });

  it('one in flight: the next write waits for the batch before it', async () => {
    const queue = new CommitQueue(db, 'immediate', undefined, 1);
    const order: string[] = [];
    const held = queue.run(insert, ['held', 1]).then((n) => (order.push('held'), n));
    await someoneWaitsForALock();
    const free = queue.run(insert, ['free', 2]).then((n) => (order.push('free'), n));
    await blocker.query('commit');
    // The blocker committed 'held' first: this queue's insert of it changes nothing.
    expect(await held).toBe(0);
    expect(await free).toBe(1);
    expect(order).toEqual(['held', 'free']);
  });

  it('refuses a synchronous writer with more than one batch, and a count below one', () => {
    const writer = { transaction: <T>(work: () => T): T => work(), run: () => 0 };
    expect(() => new CommitQueue(db, 'turn', writer, 2)).toThrow(RangeError);
    expect(() => new CommitQueue(db, 'turn', undefined, 0)).toThrow(RangeError);
  });
});

const NOW = 1_700_000_000_000;
const code = (id: string): LoginCode => ({
  code: id, tabId: 'tab-1234', sessionHash: 'h', origin: 'https://a.example', purpose: `purpose ${id}`, propertyFilter: null,
  attachmentFilter: null, serviceId: '', agentApiTimeout: null, nonce: 'n', createdAt: NOW, expiresAt: NOW + 300_000, state: 'pending',
  legalId: null, signedAt: null, scanSeconds: null, fetchedAt: null, bindingHash: null,
});

const callback = (id: string): Callback => ({
  id: `msg_${id}`, serviceId: 'svc', tabId: 'tab-1234', tabSession: 'h', url: 'https://backend.example/cb', body: '{}', webhookSecret: null,
  state: 'pending', attempts: 0, nextAttemptAt: NOW, deadline: NOW + 3_600_000, lastError: null, createdAt: NOW, deliveredAt: null,
});

describe('a PostgreSQL store runs batches side by side by its pool size', () => {
  // Backend-mode settlements (the code and its callback, through the outbox's commit queue): the settlement of
  // 'held' waits for the blocker's row lock; the settlement of 'free' comes after it.
  for (const { size, side } of [
    { size: 10, side: true },
    { size: 4, side: false },
  ]) {
    it(`pool of ${size}: ${side ? 'a settlement commits while the one before it waits' : 'a settlement waits for the one before it'}`, async () => {
      const store = await openPostgresStore(url, { size });
      try {
        await Promise.all([store.codes.insert(code('held')), store.codes.insert(code('free'))]);
        await blocker.query('rollback');
        await blocker.query('begin');
        await blocker.query(`update codes set purpose = 'locked' where code = 'held'`);
        const order: string[] = [];
        const settle = (id: string) => store.codes.settle(id, { state: 'approved', legalId: 'legal@example', now: NOW + 1, callback: { callback: callback(id), leaseUntil: NOW + 60_000 } }).then((won) => (order.push(id), won));
        const held = settle('held');
        await someoneWaitsForALock();
        const free = settle('free');
        if (side) {
          expect(await free).toBe(true);
          expect(order).toEqual(['free']);
          await blocker.query('commit');
        } else {
          await blocker.query('commit');
          expect(await free).toBe(true);
        }
        expect(await held).toBe(true);
        expect(order).toEqual(side ? ['free', 'held'] : ['held', 'free']);
        expect((await store.callbacks.get('msg_held'))?.state).toBe('pending');
      } finally {
        await store.close();
      }
    });
  }
});
