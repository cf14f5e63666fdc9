/**
 * How long a publish key outlives its entry (broker.ts \`publish\`): an entry trimmed for the count bound
 * while younger than the age bound keeps its key, because a retry of it (the hub's, another node's result
 * outbox) still comes within the age bound and must answer the entry instead of appending a copy under a new
 * id. Per tab, at most this many × the count bound are kept, so memory stays bounded; a tab that gets more
 * events than that within the age bound loses the guarantee for the oldest.
 */
export const TRIMMED_KEYS_PER_LIMIT = 10;

/**
 * What is left of a tab's kept trimmed entries (oldest first) once those past the age bound (`at` before
 * `cutoff`) and those beyond `TRIMMED_KEYS_PER_LIMIT` × `limit` are dropped; undefined when none is left, so an
 * idle tab keeps no array.
 */
export function forgetTrimmedKeys<E extends { at: number }>(kept: E[], cutoff: number, limit: number): E[] | undefined {
  let n = Math.max(0, kept.length - limit * TRIMMED_KEYS_PER_LIMIT);
  while (n < kept.length && kept[n]!.at < cutoff) n++;
  const left = n === 0 ? kept : kept.slice(n);
  return left.length === 0 ? undefined : left;
}
