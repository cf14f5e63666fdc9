import { Agent, type Dispatcher } from 'undici';
import { postOnce } from './post.js';
import { webhookSignatureHeader } from './webhook-signature.js';

/**
 * One callback attempt as the sending side gets it: where (checked already: `checkCallbackUrl`), what,
 * and the attempt's timestamp. The same on the event loop and on the delivery thread.
 */
export interface AttemptRequest {
  /** `https://host[:port]` of the callback URL. */
  origin: string;
  /** Path and query of the callback URL. */
  path: string;
  /** The webhook id (`msg_…`). */
  id: string;
  /** Unix seconds of this attempt. */
  timestamp: number;
  body: string;
  /** The backend's `whsec_…` secret, when it registered one. */
  secret: string | null;
}

/** What came of an attempt: the backend's status (and Retry-After), or why there was none (`failureReason`). */
export type AttemptAnswer = { status: number; retryAfter: string | undefined } | { failure: string };

/** Sends attempts: on the event loop (local-transport.ts) or on a thread of their own (thread-transport.ts). */
export interface CallbackTransport {
  send(request: AttemptRequest): Promise<AttemptAnswer>;
  /** Stops whatever the transport started; attempts still owed are answered (`interrupted` at worst). */
  close(): Promise<void>;
}

/** How callback connections are made and bounded, wherever they are made. */
export interface ConnectionOptions {
  /** Extra CA certificates (PEM) trusted for callbacks, e.g. a backend's own CA. */
  ca: string | undefined;
  connectTimeoutMs: number;
  totalTimeoutMs: number;
  /** Response bodies are not read beyond this (only the status matters). */
  maxResponseBytes: number;
}

/** net.connect's `lookup` (the connect-time address check of address-policy.ts, or a relay to it). */
export type ConnectLookup = (
  hostname: string,
  options: { all?: boolean },
  callback: (err: NodeJS.ErrnoException | null, address: string | { address: string; family: number }[], family?: number) => void,
) => void;

/** The agent callbacks are POSTed through: every connection's address goes through `lookup`; redirects are never followed. */
export const callbackAgent = (lookup: ConnectLookup, o: ConnectionOptions): Agent =>
  new Agent({
    connect: { lookup, timeout: o.connectTimeoutMs, ...(o.ca ? { ca: o.ca } : {}) },
    headersTimeout: o.totalTimeoutMs,
    bodyTimeout: o.totalTimeoutMs,
  });

/** Signs (Standard Webhooks v1a, and v1 with the backend's secret) and POSTs one attempt; never rejects. */
export async function sendAttempt(dispatcher: Dispatcher, r: AttemptRequest, signEd25519: (content: Buffer) => Promise<Buffer>, o: ConnectionOptions): Promise<AttemptAnswer> {
  try {
    const signature = await webhookSignatureHeader({ id: r.id, timestamp: r.timestamp, body: r.body, signEd25519, secret: r.secret });
    const headers = {
      'content-type': 'application/json',
      'user-agent': 'tabwire-callbacks',
      'webhook-id': r.id,
      'webhook-timestamp': String(r.timestamp),
      'webhook-signature': signature,
    };
    return await postOnce(dispatcher, r.origin, r.path, headers, r.body, { timeoutMs: o.totalTimeoutMs, maxResponseBytes: o.maxResponseBytes });
  } catch (err) {
    return { failure: failureReason(err) };
  }
}

/** The metric's `reason` for an attempt that got no answer (docs/metrics.md). */
export function failureReason(err: unknown): string {
  const code = (err as { code?: string; cause?: { code?: string } }).code ?? (err as { cause?: { code?: string } }).cause?.code;
  if (code === 'ECALLBACKADDRESS') return 'address_refused';
  if (code === 'ECONNREFUSED') return 'connection_refused';
  if (code === 'UND_ERR_CONNECT_TIMEOUT' || code === 'UND_ERR_HEADERS_TIMEOUT' || (err as Error).name === 'TimeoutError') return 'timeout';
  if (typeof code === 'string' && (code.startsWith('ERR_TLS') || code.includes('CERT') || code === 'DEPTH_ZERO_SELF_SIGNED_CERT')) return 'tls';
  return 'network';
}
