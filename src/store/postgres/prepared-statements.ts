import type pg from 'pg';
import type { PostgresCursor, PostgresPool, PostgresPoolClient, PostgresQueryResult } from 'kysely';

/**
 * Statements sent as named prepared statements, so PostgreSQL parses and plans each one once per connection
 * instead of at every call. Kysely sends every statement unnamed (parse, plan, run each time); measured on
 * this project's test machine, naming halved PostgreSQL's CPU per statement: a one-row SELECT by primary key
 * 180 → 86 µs, a one-row UPDATE 167 → 80 µs (docs/store.md "Prepared statements").
 *
 * Which statements are named:
 * - only SELECT, INSERT, UPDATE, DELETE and WITH (DML); BEGIN/COMMIT and the migrations' DDL stay unnamed;
 * - at most `PREPARED_PARAMETERS_LIMIT` parameters, so statements with a variable list (`in (…)` of ids)
 *   do not take a name per list length;
 * - at most `PREPARED_TEXTS_LIMIT` different texts per process (first come), a bound on what each connection
 *   keeps prepared on the server: the statements of the hot paths come first and stay;
 * - inside a transaction, none whose columns come from `*`: see below.
 *
 * A prepared statement whose result columns change under it (a rolling upgrade's migration adds a column
 * to a table another node reads with `select *`) fails with "cached plan must not change result type"
 * (SQLSTATE 0A000). Its text is then never named again in this process; outside a transaction the call is
 * sent again unnamed and succeeds. Inside a transaction the transaction has failed, so `*` statements are
 * not named there at all.
 */
export const PREPARED_TEXTS_LIMIT = 500;
export const PREPARED_PARAMETERS_LIMIT = 64;

const DML = /^\s*(select|insert|update|delete|with)\b/i;
/** `select *`, `returning *`, `"t".*` (a `*` inside parentheses, as in count(*), names no columns). */
const STAR_COLUMNS = /(^|[\s,.])\*/;
const TRANSACTION_START = /^\s*(begin|start\s+transaction)\b/i;
/** COMMIT, ROLLBACK (not ROLLBACK TO SAVEPOINT), END, ABORT. */
const TRANSACTION_END = /^\s*(commit|rollback|end|abort)\b(?!\s+to\b)/i;

/** The names given to statement texts by one process: shared by its connections, bounded. */
export class StatementNames {
  private readonly names = new Map<string, string>();
  /** Texts that failed as prepared statements; bounded like `names`, since each was in it first. */
  private readonly refused = new Set<string>();

  /** The name to prepare `text` under, or undefined to send it unnamed. */
  nameFor(text: string, parameterCount: number, inTransaction: boolean): string | undefined {
    const known = this.names.get(text);
    if (known !== undefined) return inTransaction && STAR_COLUMNS.test(text) ? undefined : known;
    if (this.refused.has(text) || this.names.size >= PREPARED_TEXTS_LIMIT) return undefined;
    if (parameterCount > PREPARED_PARAMETERS_LIMIT || !DML.test(text)) return undefined;
    if (inTransaction && STAR_COLUMNS.test(text)) return undefined;
    const name = `tw${this.names.size + this.refused.size + 1}`;
    this.names.set(text, name);
    return name;
  }

  /** Sends `text` unnamed from now on (its prepared form failed: see the module comment). */
  refuse(text: string): void {
    if (this.names.delete(text)) this.refused.add(text);
  }

  /** How many texts are named now (for tests). */
  get size(): number {
    return this.names.size;
  }
}

/** PostgreSQL's answer when a prepared statement's result columns changed since it was prepared. */
const isStalePlan = (err: unknown): boolean =>
  typeof err === 'object' && err !== null && (err as { code?: unknown }).code === '0A000' && /cached plan must not change result type/.test(String((err as Error).message));

/** One pool connection as Kysely sees it, sending its statements by name where `names` gives one. */
class NamingClient implements PostgresPoolClient {
  private inTransaction = false;

  constructor(
    private readonly client: pg.PoolClient,
    private readonly names: StatementNames,
  ) {}

  query<R>(sql: string, parameters: ReadonlyArray<unknown>): Promise<PostgresQueryResult<R>>;
  query<R>(cursor: PostgresCursor<R>): PostgresCursor<R>;
  query<R>(sqlOrCursor: string | PostgresCursor<R>, parameters?: ReadonlyArray<unknown>): Promise<PostgresQueryResult<R>> | PostgresCursor<R> {
    const client = this.client as unknown as PostgresPoolClient;
    if (typeof sqlOrCursor !== 'string') return client.query(sqlOrCursor);
    const text = sqlOrCursor;
    const values = parameters ?? [];
    if (TRANSACTION_START.test(text)) this.inTransaction = true;
    else if (TRANSACTION_END.test(text)) this.inTransaction = false;
    const name = this.names.nameFor(text, values.length, this.inTransaction);
    if (name === undefined) return client.query<R>(text, values);
    const inTransaction = this.inTransaction;
    const named = this.client.query({ name, text, values: [...values] }) as unknown as Promise<PostgresQueryResult<R>>;
    return named.catch((err: unknown) => {
      if (!isStalePlan(err)) throw err;
      this.names.refuse(text);
      if (inTransaction) throw err;
      return client.query<R>(text, values);
    });
  }

  release(): void {
    this.client.release();
  }
}

/**
 * The pool as Kysely's PostgresDialect takes it, its connections naming their statements. One wrapper per
 * `pg` connection (Kysely keys its connection objects by the client it is given).
 */
export function preparedStatementsPool(pool: pg.Pool, names = new StatementNames()): PostgresPool {
  const wrappers = new WeakMap<pg.PoolClient, NamingClient>();
  return {
    async connect() {
      const client = await pool.connect();
      let wrapper = wrappers.get(client);
      if (!wrapper) {
        wrapper = new NamingClient(client, names);
        wrappers.set(client, wrapper);
      }
      return wrapper;
    },
    end: () => pool.end(),
  };
}
