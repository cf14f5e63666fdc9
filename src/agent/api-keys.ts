import { createHash, randomBytes } from 'node:crypto';
import type { Clock } from '../clock.js';
import type { ApiKeyStore } from '../store/stores.js';

/** Operator API keys: `twk_<secret>`, shown once; the store keeps a SHA-256 (high-entropy secret, so no KDF). */
const PREFIX = 'twk_';

export const hashApiKey = (key: string): string => createHash('sha256').update(key).digest('base64url');

export async function createApiKey(keys: ApiKeyStore, clock: Clock, note: string | null): Promise<{ id: string; key: string }> {
  const key = PREFIX + randomBytes(32).toString('base64url');
  const keyHash = hashApiKey(key);
  const id = keyHash.slice(0, 12);
  await keys.insert({ id, keyHash, note, createdAt: clock.now(), revokedAt: null });
  return { id, key };
}

/** Whether `key` is a current (unrevoked) operator key. */
export async function isValidApiKey(keys: ApiKeyStore, key: string): Promise<boolean> {
  if (!key.startsWith(PREFIX) || key.length > 128) return false;
  const stored = await keys.byHash(hashApiKey(key));
  return stored !== undefined && stored.revokedAt === null;
}
