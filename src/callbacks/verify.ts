import { createPublicKey, verify } from 'node:crypto';
import { strictlyEncoded } from '../protocol/ed25519-strict.js';

/**
 * `tabwire/backend`: verifies a tabwire callback in a site's backend (docs/backend.md).
 * Standard Webhooks asymmetric scheme: `webhook-signature: v1a,<base64 Ed25519>` over
 * `${webhook-id}.${webhook-timestamp}.${rawBody}`, with the service's public key (`whpk_…` from
 * `/.well-known/tabwire/webhook-key`). `verifyCallback` needs only node:crypto and the pure strict-encoding
 * checks (a key or R of small order, or a non-canonical S, never verifies); `verifyResultSignature`,
 * re-exported below, also uses `canonicalize` (RFC 8785).
 */

export class CallbackVerificationError extends Error {
  override name = 'CallbackVerificationError';
}

type HeaderBag = Headers | Record<string, string | string[] | undefined>;

function header(headers: HeaderBag, name: string): string | undefined {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
  const bag = headers as Record<string, string | string[] | undefined>;
  const value = bag[name] ?? bag[Object.keys(bag).find((k) => k.toLowerCase() === name) ?? ''];
  return Array.isArray(value) ? value[0] : value;
}

export interface VerifyOptions {
  /** Largest accepted distance between webhook-timestamp and now, in seconds (default 300). */
  toleranceSeconds?: number;
  now?: Date;
}

/**
 * Returns the parsed body when the callback is authentic and recent; throws
 * CallbackVerificationError otherwise. Verify the raw body bytes as received, before any parsing.
 */
export function verifyCallback(headers: HeaderBag, rawBody: string | Buffer, publicKey: string, options: VerifyOptions = {}): unknown {
  const id = header(headers, 'webhook-id');
  const timestamp = header(headers, 'webhook-timestamp');
  const signatures = header(headers, 'webhook-signature');
  if (!id || !timestamp || !signatures) throw new CallbackVerificationError('missing webhook-id, webhook-timestamp or webhook-signature');
  const seconds = Number(timestamp);
  const now = Math.floor((options.now ?? new Date()).getTime() / 1000);
  if (!Number.isInteger(seconds) || Math.abs(now - seconds) > (options.toleranceSeconds ?? 300)) {
    throw new CallbackVerificationError('webhook-timestamp is missing or too far from now');
  }
  const raw = Buffer.from(publicKey.replace(/^whpk_/, ''), 'base64');
  const key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: raw.toString('base64url') }, format: 'jwk' });
  const body = typeof rawBody === 'string' ? rawBody : rawBody.toString('utf8');
  const content = Buffer.from(`${id}.${seconds}.${body}`, 'utf8');
  const valid = signatures.split(' ').some((entry) => {
    const [version, signature] = entry.split(',');
    if (version !== 'v1a' || signature === undefined) return false;
    const bytes = Buffer.from(signature, 'base64');
    return strictlyEncoded(raw, bytes) && verify(null, content, key, bytes);
  });
  if (!valid) throw new CallbackVerificationError('no valid v1a signature');
  return JSON.parse(body) as unknown;
}

// A site that receives a result from its page (browser-only mode) checks it with the service's published result keys.
export { verifyResultSignature, ResultVerificationError, type ResultKeyJwk } from '../quicklogin/verify-result.js';
