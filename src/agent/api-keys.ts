import { createHash, randomBytes } from 'node:crypto';
import type { Clock } from '../clock.js';
import type { ApiKeyStore } from '../store/stores.js';

/** Operator API keys: `twk_<secret>`, shown once; the store keeps a SHA-256 (high-entropy secret, so no KDF). */
const PREFIX = 'twk_';

export const hashApiKey = (key: string): string => createHash('sha256').update(key).digest('base64url');

/**
 * A key's id, shown by `apikey list` and typed back into `apikey revoke <id>`: 16 hex digits of the key's
 * SHA-256. Hex rather than the stored hash's base64url, whose first character is "-" for one key in 64: the
 * CLI would read such an id as a flag. (Ids made before this rule keep working: `apikey revoke -- <id>`.)
 */
const apiKeyId = (key: string): string => createHash('sha256').update(key).digest('hex').slice(0, 16);

export async function createApiKey(keys: ApiKeyStore, clock: Clock, note: string | null): Promise<{ id: string; key: string }> {
  const key = PREFIX + randomBytes(32).toString('base64url');
  const keyHash = hashApiKey(key);
  const id = apiKeyId(key);
  await keys.insert({ id, keyHash, note, createdAt: clock.now(), revokedAt: null });
  return { id, key };
}

/** Whether `key` is a current (unrevoked) operator key. */
export async function isValidApiKey(keys: ApiKeyStore, key: string): Promise<boolean> {
  if (!key.startsWith(PREFIX) || key.length > 128) return false;
  const stored = await keys.byHash(hashApiKey(key));
  return stored !== undefined && stored.revokedAt === null;
}
