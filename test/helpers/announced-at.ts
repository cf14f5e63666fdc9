import pg from 'pg';
import type { ClusterStore } from './cluster.js';

/** A code's published mark in a cluster's PostgreSQL database (null while its result is owed to its page). */
export async function announcedAt(store: ClusterStore, code: string): Promise<string | null> {
  if (!('databaseUrl' in store)) throw new Error('the published mark is read from PostgreSQL here');
  const client = new pg.Client({ connectionString: store.databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ announced_at: string | null }>('SELECT announced_at FROM codes WHERE code = $1', [code]);
    if (rows.length !== 1) throw new Error(`code ${code} has no row`);
    return rows[0]!.announced_at;
  } finally {
    await client.end();
  }
}
