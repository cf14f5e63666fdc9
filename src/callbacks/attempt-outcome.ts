/** What came of one callback attempt, as the outbox acts on it (docs/backend.md "Delivery guarantees"). */
export type Outcome = { kind: 'delivered' } | { kind: 'gone' } | { kind: 'retry'; reason: string; retryAfterMs?: number };

/** A backend's answer: any 2xx delivers, 410 Gone ends the attempts, anything else is retried (honouring Retry-After). */
export function outcomeOfAnswer(status: number, retryAfter: string | undefined, now: number): Outcome {
  if (status >= 200 && status < 300) return { kind: 'delivered' };
  if (status === 410) return { kind: 'gone' };
  const retryAfterMs = parseRetryAfter(retryAfter, now);
  // Redirects are never followed (a callback URL is checked once, not wherever it points).
  const reason = status >= 300 && status < 400 ? 'redirect_not_followed' : `status_${status}`;
  return retryAfterMs === undefined ? { kind: 'retry', reason } : { kind: 'retry', reason, retryAfterMs };
}

/**
 * Exponential backoff with jitter: a random delay in [d/2, d], d = base * 2^(attempt-1), capped. Whole
 * milliseconds: the time is stored in a bigint column, which PostgreSQL (and so the store) refuses 1.5 for.
 */
export function backoffMs(attempt: number, baseMs: number, capMs: number): number {
  const delay = Math.min(capMs, baseMs * 2 ** (attempt - 1));
  return Math.floor(delay / 2 + Math.random() * (delay / 2));
}

/** RFC 9110 §10.2.3: seconds or an HTTP date. */
function parseRetryAfter(value: string | string[] | undefined, now: number): number | undefined {
  const text = Array.isArray(value) ? value[0] : value;
  if (text === undefined) return undefined;
  if (/^\d+$/.test(text.trim())) return Number(text.trim()) * 1000;
  const date = Date.parse(text);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** The metric's `reason` for an attempt that got no answer (docs/metrics.md). */
export function failureReason(err: unknown): string {
  const code = (err as { code?: string; cause?: { code?: string } }).code ?? (err as { cause?: { code?: string } }).cause?.code;
  if (code === 'ECALLBACKADDRESS') return 'address_refused';
  if (code === 'ECONNREFUSED') return 'connection_refused';
  if (code === 'UND_ERR_CONNECT_TIMEOUT' || code === 'UND_ERR_HEADERS_TIMEOUT' || (err as Error).name === 'TimeoutError') return 'timeout';
  // OpenSSL's verification codes: *CERT* (self-signed, expired, …) and UNABLE_TO_* (e.g. a chain without its
  // intermediate: UNABLE_TO_VERIFY_LEAF_SIGNATURE); Node's own: ERR_TLS_*.
  if (typeof code === 'string' && (code.startsWith('ERR_TLS') || code.includes('CERT') || code.startsWith('UNABLE_TO_'))) return 'tls';
  return 'network';
}
