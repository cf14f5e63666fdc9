import type SQLite from 'better-sqlite3';
import type { SqliteDatabase, SqliteStatement } from 'kysely';

const STATEMENT_CACHE_SIZE = 512;

/**
 * better-sqlite3 as Kysely's SqliteDatabase, with prepared statements kept by SQL text. Kysely's
 * SQLite driver prepares every query anew; on the hot paths (QR codes, callbacks, routing) the same
 * few statements run thousands of times a second, and preparing was a sixth of the callback
 * outbox's CPU (docs/benchmarks.md). Statements run synchronously on Kysely's one connection, so a
 * cached statement is never used by two queries at once; `iterate` (streaming) gets a fresh one.
 */
export function withStatementCache(sqlite: SQLite.Database): SqliteDatabase {
  const cache = new Map<string, SqliteStatement>();
  return {
    close: () => sqlite.close(),
    prepare(sql: string): SqliteStatement {
      let statement = cache.get(sql);
      if (!statement) {
        const prepared = sqlite.prepare(sql);
        statement = {
          reader: prepared.reader,
          all: (parameters) => prepared.all(parameters),
          run: (parameters) => prepared.run(parameters),
          iterate: (parameters) => sqlite.prepare(sql).iterate(parameters),
        };
        // Queries with varying shapes (IN lists) make new texts: bound the cache simply.
        if (cache.size >= STATEMENT_CACHE_SIZE) cache.clear();
        cache.set(sql, statement);
      }
      return statement;
    },
  };
}
