import { describe, expect, it } from 'vitest';
import { postgresUnavailable } from '../../src/store/postgres/errors.js';
import { sqliteUnavailable } from '../../src/store/sqlite/errors.js';

// Which database errors answer 503 store_unavailable (docs/store.md "Outages") and which stay 500.

const coded = (code: string, message = 'x') => Object.assign(new Error(message), { code });

describe('store errors that mean "unavailable"', () => {
  it('PostgreSQL: unreachable, shutting down, starting up, out of connections, a connection that died', () => {
    for (const err of [
      coded('ECONNREFUSED'),
      coded('ECONNRESET'),
      coded('08006'),
      coded('08001'),
      coded('57P01'),
      coded('57P03'),
      coded('53300'),
      new Error('Connection terminated unexpectedly'),
      new Error('timeout exceeded when trying to connect'),
      new Error('Client has encountered a connection error and is not queryable'),
      new AggregateError([coded('ECONNREFUSED'), coded('ECONNREFUSED')], 'connect'),
    ]) {
      expect(postgresUnavailable(err), String((err as { code?: string }).code ?? err.message)).toBe(true);
    }
  });

  it('PostgreSQL: a wrong statement, a constraint or a bad value is not an outage', () => {
    for (const err of [coded('23505'), coded('22P02'), coded('42P01'), coded('40P01'), new Error('Cannot use a pool after calling end on the pool'), 'text', undefined]) {
      expect(postgresUnavailable(err)).toBe(false);
    }
  });

  it('SQLite: only a database that stayed locked', () => {
    expect(sqliteUnavailable(coded('SQLITE_BUSY'))).toBe(true);
    expect(sqliteUnavailable(coded('SQLITE_BUSY_SNAPSHOT'))).toBe(true);
    expect(sqliteUnavailable(coded('SQLITE_LOCKED'))).toBe(true);
    expect(sqliteUnavailable(coded('SQLITE_CONSTRAINT_PRIMARYKEY'))).toBe(false);
    expect(sqliteUnavailable(coded('SQLITE_IOERR'))).toBe(false);
  });
});
