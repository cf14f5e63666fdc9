import type SQLite from 'better-sqlite3';
import type { SqliteDatabase, SqliteStatement } from 'kysely';

const STATEMENT_CACHE_SIZE = 512;

/**
 * better-sqlite3's prepared statements kept by SQL text. On the hot paths (QR codes, callbacks, routing)
 * the same few statements run thousands of times a second, and preparing was a sixth of the callback
 * outbox's CPU (docs/benchmarks.md#group-commit). Statements run synchronously on the one connection, so a cached
 * statement is never used by two queries at once.
 */
export class StatementCache {
  private readonly statements = new Map<string, SQLite.Statement>();

  constructor(readonly sqlite: SQLite.Database) {}

  prepared(sql: string): SQLite.Statement {
    let statement = this.statements.get(sql);
    if (!statement) {
      statement = this.sqlite.prepare(sql);
      // Queries with varying shapes (IN lists) make new texts: bound the cache simply.
      if (this.statements.size >= STATEMENT_CACHE_SIZE) this.statements.clear();
      this.statements.set(sql, statement);
    }
    return statement;
  }
}

/**
 * The cached statements as Kysely's SqliteDatabase (Kysely's SQLite driver prepares every query anew).
 * `iterate` (streaming) gets a fresh statement: a stream may still be open when the next query runs.
 */
export function withStatementCache(cache: StatementCache): SqliteDatabase {
  const wrapped = new Map<string, SqliteStatement>();
  const { sqlite } = cache;
  return {
    close: () => sqlite.close(),
    prepare(sql: string): SqliteStatement {
      let statement = wrapped.get(sql);
      if (!statement) {
        const prepared = cache.prepared(sql);
        statement = {
          reader: prepared.reader,
          all: (parameters) => prepared.all(parameters),
          run: (parameters) => prepared.run(parameters),
          iterate: (parameters) => sqlite.prepare(sql).iterate(parameters),
        };
        if (wrapped.size >= STATEMENT_CACHE_SIZE) wrapped.clear();
        wrapped.set(sql, statement);
      }
      return statement;
    },
  };
}
