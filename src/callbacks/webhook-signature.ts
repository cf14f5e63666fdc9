import { createHmac, sign, type KeyObject } from 'node:crypto';

/**
 * Standard Webhooks signatures (standardwebhooks.com): the signed content is
 * `${webhook-id}.${webhook-timestamp}.${body}`; `v1a` is Ed25519 over it (asymmetric), `v1` is
 * HMAC-SHA256 with the backend's `whsec_` secret (symmetric). Several signatures are separated by spaces.
 */
export interface WebhookSigning {
  id: string;
  /** Unix seconds. */
  timestamp: number;
  body: string;
  privateKey: KeyObject;
  /** The backend's own `whsec_…` secret, when it registered one. */
  secret: string | null;
}

export const signedContent = (id: string, timestamp: number, body: string): Buffer => Buffer.from(`${id}.${timestamp}.${body}`, 'utf8');

/** The `webhook-signature` header value. */
export function webhookSignatureHeader(s: WebhookSigning): string {
  const content = signedContent(s.id, s.timestamp, s.body);
  const signatures = [`v1a,${sign(null, content, s.privateKey).toString('base64')}`];
  if (s.secret !== null) {
    const key = Buffer.from(s.secret.slice('whsec_'.length), 'base64');
    signatures.unshift(`v1,${createHmac('sha256', key).update(content).digest('base64')}`);
  }
  return signatures.join(' ');
}
