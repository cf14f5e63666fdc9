import type { ServerKey, ServerKeyStore } from './stores.js';

/**
 * The newest key of a purpose's ring, creating the ring's first key with `make` when there is none. Of
 * nodes starting together, one creates it and all use it (ServerKeyStore.insertFirst decides); `make`
 * may run on each of them, and `onLost` hears about a key that lost, to clean up what it made for it.
 */
export async function newestKey(keys: ServerKeyStore, purpose: string, make: () => Promise<ServerKey> | ServerKey, onLost?: (key: ServerKey) => Promise<void>): Promise<ServerKey> {
  const [existing] = await keys.list(purpose);
  if (existing) return existing;
  const made = await make();
  if (!(await keys.insertFirst(made)) && onLost) await onLost(made);
  const [newest] = await keys.list(purpose);
  if (!newest) throw new Error(`the ${purpose} key ring is empty after creating its first key`);
  return newest;
}
