/** Socket errors of a database that is down, restarting or unreachable. */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'EHOSTDOWN', 'ENETDOWN']);

/**
 * SQLSTATEs that mean the server cannot serve now (PostgreSQL manual, appendix A "Error Codes"): class 08
 * (connection exception), 57P01 admin_shutdown, 57P02 crash_shutdown, 57P03 cannot_connect_now (starting
 * up or shutting down), 53300 too_many_connections.
 */
const UNAVAILABLE_STATES = new Set(['57P01', '57P02', '57P03', '53300']);

/** What `pg` throws, without a code, when a connection dies under a query or cannot be had from the pool in time. */
const PG_CONNECTION_MESSAGES = /^(Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Client was closed)/;

/** Whether an error from `pg` means PostgreSQL is not reachable now (answered 503 `store_unavailable`, docs/store.md). */
export function postgresUnavailable(err: unknown): boolean {
  if (err instanceof AggregateError && err.errors.some(postgresUnavailable)) return true; // Node tries each address of a name
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && (NETWORK_CODES.has(code) || UNAVAILABLE_STATES.has(code) || /^08[0-9A-Z]{3}$/.test(code))) return true;
  return PG_CONNECTION_MESSAGES.test(err.message);
}
