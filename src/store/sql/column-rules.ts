import {
  ColumnNode,
  ColumnUpdateNode,
  InsertQueryNode,
  PrimitiveValueListNode,
  TableNode,
  UpdateQueryNode,
  ValueListNode,
  ValueNode,
  ValuesNode,
  type CompiledQuery,
  type OperationNode,
} from 'kysely';
import type { Database } from '../schema.js';

/**
 * The column types of the migrations, enforced before a value reaches the database. PostgreSQL refuses a
 * `varchar(16)` value of 17 characters, `1.5` for an `integer`, and U+0000 in any text; SQLite stores all
 * three without a word. Checking here makes both backends refuse the same values with the same error, so
 * a gap in input validation shows up in tests on SQLite too (docs/store.md "Column types").
 * A test compares this table with the schema PostgreSQL reports (test/integration/store-schema.test.ts).
 */
export type ColumnRule = { kind: 'varchar'; max: number } | { kind: 'text' } | { kind: 'integer' } | { kind: 'bigint' };

const v = (max: number): ColumnRule => ({ kind: 'varchar', max });
const TEXT: ColumnRule = { kind: 'text' };
const INT: ColumnRule = { kind: 'integer' };
const BIG: ColumnRule = { kind: 'bigint' };

export const COLUMN_RULES: { readonly [T in keyof Database]: { readonly [C in keyof Database[T]]-?: ColumnRule } } = {
  tabs: { tab_id: v(64), session_hash: v(64), registered_at: BIG, seen_at: BIG, origin: v(2048) },
  codes: {
    code: v(64), tab_id: v(64), session_hash: v(64), origin: TEXT, purpose: TEXT, property_filter: TEXT, attachment_filter: TEXT,
    service_id: v(128), agent_api_timeout: INT, nonce: v(64), created_at: BIG, expires_at: BIG, state: v(16), legal_id: v(255),
    signed_at: BIG, tab_event: TEXT, scan_seconds: INT, fetched_at: BIG, binding_hash: v(64), announced_at: BIG,
  },
  qr_requests: {
    id: BIG, kid: v(64), tab_id: v(64), session_hash: v(64), origin: TEXT, purpose: TEXT, property_filter: TEXT, attachment_filter: TEXT,
    service_id: v(128), agent_api_timeout: INT, scan_seconds: INT, validity_ms: BIG, created_at: BIG, expires_at: BIG,
  },
  written_results: { publish_key: v(64), expires_at: BIG },
  identities: {
    id: v(255), provider: v(255), state: v(16), created_at: BIG, updated_at: BIG, valid_from: BIG, valid_to: BIG, properties: TEXT,
    attachments: TEXT, client_key_name: v(64), client_pub_key: TEXT, account_id: v(64), key_problem: v(32),
  },
  server_keys: { kid: v(64), purpose: v(32), private_key: TEXT, public_key: TEXT, created_at: BIG, generation: INT },
  accounts: { id: v(64), user_name: v(64), password_hash: TEXT, email: v(255), state: v(16), created_at: BIG },
  api_keys: { id: v(32), key_hash: v(64), note: TEXT, created_at: BIG, revoked_at: BIG },
  attachments: { id: v(64), identity_id: v(255), content_type: v(128), file_name: v(255), content: TEXT, size: INT, created_at: BIG },
  service_registrations: { service_id: v(64), callback_url: TEXT, session_id: v(256), webhook_secret: TEXT, created_at: BIG, expires_at: BIG },
  callbacks: {
    id: v(64), service_id: v(64), tab_id: v(64), tab_session: v(64), url: TEXT, body: TEXT, webhook_secret: TEXT, state: v(16),
    attempts: INT, next_attempt_at: BIG, deadline: BIG, lease_until: BIG, last_error: TEXT, created_at: BIG, delivered_at: BIG,
  },
  offline_messages: { id: v(64), account_id: v(64), from_jid: v(3071), to_jid: v(3071), type: v(16), content: TEXT, created_at: BIG },
  // The provider's payloads are a few KB (an interaction carries the authorization request's parameters, which
  // arrive in a request line of at most 16 KiB, Node's maxHeaderSize); 64 Ki characters refuses anything else
  // rather than storing it. URI lists are JSON arrays.
  oidc_entries: { model: v(64), id: v(255), payload: v(65536), grant_id: v(255), uid: v(255), expires_at: BIG, consumed_at: BIG },
  oidc_clients: {
    client_id: v(255), client_secret: v(255), token_auth: v(32), subject_type: v(16), id_token_alg: v(16), name: v(255),
    redirect_uris: v(32768), post_logout_redirect_uris: v(32768), created_at: BIG,
  },
};

/** PostgreSQL `integer` is 32-bit. */
const INT4_MIN = -(2 ** 31);
const INT4_MAX = 2 ** 31 - 1;

/** A value the schema refuses: a bug or a gap in input validation, never the database's fault (a 500 on every backend). */
export class StoreValueError extends Error {
  override name = 'StoreValueError';
}

/** Characters as PostgreSQL counts them for varchar(n): code points, not UTF-16 units. */
function codePoints(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        n--;
        i++;
      }
    }
  }
  return n;
}

/** Refuses U+0000 in any string parameter: PostgreSQL cannot hold it in text, nor compare with it. */
export function checkParameters(parameters: readonly unknown[]): void {
  for (const p of parameters) {
    if (typeof p === 'string' && p.includes('\u0000')) throw new StoreValueError('a text value holds U+0000, which the store cannot hold');
  }
}

/** Checks one value against its column's rule; null passes (NOT NULL is the database's to enforce, alike everywhere). */
export function checkValue(table: string, column: string, value: unknown): void {
  const rule = (COLUMN_RULES as Record<string, Record<string, ColumnRule> | undefined>)[table]?.[column];
  if (rule === undefined || value === null || value === undefined) return;
  const where = `${table}.${column}`;
  switch (rule.kind) {
    case 'varchar':
      if (typeof value === 'string' && value.length > rule.max && codePoints(value) > rule.max) {
        throw new StoreValueError(`${where} holds at most ${rule.max} characters`);
      }
      return;
    case 'text':
      return;
    case 'integer':
      if (typeof value === 'number' && !(Number.isInteger(value) && value >= INT4_MIN && value <= INT4_MAX)) {
        throw new StoreValueError(`${where} is a 32-bit integer; ${value} is not one`);
      }
      return;
    case 'bigint':
      if (typeof value === 'number' && !Number.isSafeInteger(value)) throw new StoreValueError(`${where} is an integer; ${value} is not one`);
      return;
  }
}

/** Checks a row (or the `set` of an update) of `table`. */
export function checkRow(table: keyof Database, row: Record<string, unknown>): void {
  for (const [column, value] of Object.entries(row)) checkValue(table, column, value);
}

const tableName = (node: OperationNode | undefined): string | undefined => (node && TableNode.is(node) ? node.table.identifier.name : undefined);

/**
 * Checks the parameters of an INSERT or UPDATE against the columns they are written to. The parameters
 * are matched to columns through the query's node (Kysely compiles the inserted row, then the SET list,
 * first and in order), so a statement compiled once and run with new parameters is checked too. Shapes
 * it cannot match (a CTE in front, INSERT … SELECT, expressions) are left to the store that builds them.
 */
export function checkQuery(query: CompiledQuery): void {
  const { parameters } = query;
  checkParameters(parameters);
  const node = query.query;
  if (InsertQueryNode.is(node)) {
    const table = tableName(node.into);
    if (!table || node.with || node.top || !node.columns || !node.values || !ValuesNode.is(node.values)) return;
    const columns = node.columns.map((c) => c.column.name);
    let at = 0;
    for (const row of node.values.values) {
      if (PrimitiveValueListNode.is(row)) {
        for (let i = 0; i < row.values.length; i++) checkValue(table, columns[i]!, parameters[at++]);
      } else if (ValueListNode.is(row)) {
        for (let i = 0; i < row.values.length; i++) {
          const value = row.values[i]!;
          if (!ValueNode.is(value) || value.immediate) return;
          checkValue(table, columns[i]!, parameters[at++]);
        }
      } else {
        return;
      }
    }
  } else if (UpdateQueryNode.is(node)) {
    const table = tableName(node.table);
    if (!table || node.with || node.top || !node.updates) return;
    let at = 0;
    for (const update of node.updates) {
      if (!ColumnUpdateNode.is(update) || !ValueNode.is(update.value) || update.value.immediate) return;
      if (!ColumnNode.is(update.column)) return;
      checkValue(table, update.column.column.name, parameters[at++]);
    }
  }
}
