import type { Kysely } from 'kysely';
import type { Database } from '../schema.js';
import type { AttachmentStore, StoredAttachment } from '../stores.js';

/** Identity attachments in SQL, content as base64 text (portable across SQLite and PostgreSQL). */
export class SqlAttachmentStore implements AttachmentStore {
  constructor(private readonly db: Kysely<Database>) {}

  async insert(a: StoredAttachment): Promise<void> {
    await this.db
      .insertInto('attachments')
      .values({
        id: a.id,
        identity_id: a.identityId,
        content_type: a.contentType,
        file_name: a.fileName,
        content: a.content.toString('base64'),
        size: a.content.length,
        created_at: a.createdAt,
      })
      .execute();
  }

  async get(id: string): Promise<StoredAttachment | undefined> {
    const row = await this.db.selectFrom('attachments').selectAll().where('id', '=', id).executeTakeFirst();
    return (
      row && {
        id: row.id,
        identityId: row.identity_id,
        contentType: row.content_type,
        fileName: row.file_name,
        content: Buffer.from(row.content, 'base64'),
        createdAt: Number(row.created_at),
      }
    );
  }
}
