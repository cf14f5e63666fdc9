/**
 * How long a publish key outlives its entry (broker.ts \`publish\`): an entry trimmed for the count bound
 * while younger than the age bound keeps its key, because a retry of it (the hub's, another node's result
 * outbox) still comes within the age bound and must answer the entry instead of appending a copy under a new
 * id. Per tab, at most this many × the count bound are kept, so memory stays bounded; a tab that gets more
 * events than that within the age bound loses the guarantee for the oldest.
 */
export const TRIMMED_KEYS_PER_LIMIT = 10;
