import type { Kysely } from 'kysely';
import type { Database } from '../schema.js';
import type { ServiceRegistration, ServiceRegistrationStore } from '../stores.js';

/** Backend callback registrations in SQL. */
export class SqlServiceRegistrationStore implements ServiceRegistrationStore {
  constructor(private readonly db: Kysely<Database>) {}

  async insert(r: ServiceRegistration): Promise<void> {
    await this.db
      .insertInto('service_registrations')
      .values({
        service_id: r.serviceId,
        callback_url: r.callbackUrl,
        session_id: r.sessionId,
        webhook_secret: r.webhookSecret,
        created_at: r.createdAt,
        expires_at: r.expiresAt,
      })
      .execute();
  }

  async get(serviceId: string): Promise<ServiceRegistration | undefined> {
    const row = await this.db.selectFrom('service_registrations').selectAll().where('service_id', '=', serviceId).executeTakeFirst();
    return (
      row && {
        serviceId: row.service_id,
        callbackUrl: row.callback_url,
        sessionId: row.session_id,
        webhookSecret: row.webhook_secret,
        createdAt: Number(row.created_at),
        expiresAt: Number(row.expires_at),
      }
    );
  }

  async deleteExpired(before: number): Promise<number> {
    const result = await this.db.deleteFrom('service_registrations').where('expires_at', '<', before).executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  async renew(serviceId: string, expiresAt: number): Promise<boolean> {
    const result = await this.db.updateTable('service_registrations').set({ expires_at: expiresAt }).where('service_id', '=', serviceId).executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
  }
}
