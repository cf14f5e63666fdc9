/** Socket errors of a Redis that is down, restarting or unreachable. */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'EHOSTDOWN', 'ENETDOWN']);

/**
 * What ioredis rejects a command with when it got no answer: the client-side `commandTimeout`
 * (connection.ts), the offline queue flushed after failed reconnects (MaxRetriesPerRequestError),
 * and a connection closed under the command; and those of its Redis Cluster client when no shard (or not the
 * one a command needs) can be reached.
 */
const CLIENT_MESSAGES = /^(Command timed out|Reached the max retries per request limit|Connection is closed\.|Stream isn't writeable|Cluster is disconnected|Cluster isn't ready|None of startup nodes is available|Failed to refresh slots cache|Node is disconnected|Too many Cluster redirections)/;

/**
 * Error replies of a Redis that cannot serve now (Redis documentation, "Error replies"): LOADING (reading
 * its data at start), BUSY (a script runs too long), MASTERDOWN and READONLY (Sentinel fail-over),
 * CLUSTERDOWN and TRYAGAIN (Redis Cluster re-sharding), MOVED and ASK when the Cluster client hands one back
 * instead of following it (seen while it learned the new primary after a fail-over): the client then reads
 * the slot map again (cluster-connection.ts), so asked again a moment later, the command reaches the right node.
 */
const UNAVAILABLE_REPLIES = /^(LOADING|BUSY|MASTERDOWN|READONLY|CLUSTERDOWN|TRYAGAIN|MOVED|ASK)\b/;

/** Whether an error from ioredis means Redis is not reachable now (answered 503 `shared_state_unavailable`, docs/redis.md). */
export function redisUnavailable(err: unknown): boolean {
  if (err instanceof AggregateError && err.errors.some(redisUnavailable)) return true; // Node tries each address of a name
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && NETWORK_CODES.has(code)) return true;
  return err.name === 'MaxRetriesPerRequestError' || CLIENT_MESSAGES.test(err.message) || UNAVAILABLE_REPLIES.test(err.message);
}
