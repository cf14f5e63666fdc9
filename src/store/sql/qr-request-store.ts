import type { Kysely, Selectable } from 'kysely';
import type { QrRequestRecord, QrRequestStore } from '../qr-request-store.js';
import type { Database, QrRequestsTable } from '../schema.js';

const toRequest = (r: Selectable<QrRequestsTable>): QrRequestRecord => ({
  id: Number(r.id),
  kid: r.kid,
  tabId: r.tab_id,
  sessionHash: r.session_hash,
  origin: r.origin,
  purpose: r.purpose,
  propertyFilter: r.property_filter,
  attachmentFilter: r.attachment_filter,
  serviceId: r.service_id,
  agentApiTimeout: r.agent_api_timeout === null ? null : Number(r.agent_api_timeout),
  scanSeconds: r.scan_seconds === null ? null : Number(r.scan_seconds),
  validityMs: Number(r.validity_ms),
  createdAt: Number(r.created_at),
  expiresAt: Number(r.expires_at),
});

/** QR requests in SQL (SQLite or PostgreSQL through Kysely). */
export class SqlQrRequestStore implements QrRequestStore {
  constructor(private readonly db: Kysely<Database>) {}

  async insertIfAbsent(q: QrRequestRecord): Promise<boolean> {
    // ON CONFLICT DO NOTHING: on PostgreSQL the second of two concurrent inserts waits for the first's
    // commit and then inserts nothing, so nodes meeting one request at once converge on one row.
    const result = await this.db
      .insertInto('qr_requests')
      .values({
        id: q.id, kid: q.kid, tab_id: q.tabId, session_hash: q.sessionHash, origin: q.origin, purpose: q.purpose,
        property_filter: q.propertyFilter, attachment_filter: q.attachmentFilter, service_id: q.serviceId,
        agent_api_timeout: q.agentApiTimeout, scan_seconds: q.scanSeconds, validity_ms: q.validityMs,
        created_at: q.createdAt, expires_at: q.expiresAt,
      })
      .onConflict((oc) => oc.column('id').doNothing())
      .executeTakeFirst();
    return Number(result.numInsertedOrUpdatedRows ?? 0n) === 1;
  }

  async get(id: number): Promise<QrRequestRecord | undefined> {
    const row = await this.db.selectFrom('qr_requests').selectAll().where('id', '=', id).executeTakeFirst();
    return row && toRequest(row);
  }

  async extend(id: number, expiresAt: number): Promise<boolean> {
    const result = await this.db.updateTable('qr_requests').set({ expires_at: expiresAt }).where('id', '=', id).where('expires_at', '<', expiresAt).executeTakeFirst();
    if (Number(result.numUpdatedRows) === 1) return true;
    // Nothing changed: either the row already lives that long (another node extended it) or it is gone.
    return (await this.db.selectFrom('qr_requests').select('id').where('id', '=', id).executeTakeFirst()) !== undefined;
  }

  async deleteExpired(before: number): Promise<number> {
    const result = await this.db.deleteFrom('qr_requests').where('expires_at', '<', before).executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}
