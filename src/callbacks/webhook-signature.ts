import { createHmac } from 'node:crypto';

/**
 * Standard Webhooks signatures (standardwebhooks.com): the signed content is
 * `${webhook-id}.${webhook-timestamp}.${body}`; `v1a` is Ed25519 over it (asymmetric), `v1` is
 * HMAC-SHA256 with the backend's `whsec_` secret (symmetric). Several signatures are separated by spaces.
 *
 * The timestamp is that of the attempt (the specification: "every time an attempt is retried the
 * timestamp of the attempt is updated"), so each attempt is signed anew (docs/backend.md "Signing").
 */
export interface WebhookSigning {
  id: string;
  /** Unix seconds. */
  timestamp: number;
  body: string;
  /** Ed25519 with the service's key (the deliverer's BatchSigner). */
  signEd25519: (content: Buffer) => Promise<Buffer>;
  /** The backend's own `whsec_…` secret, when it registered one. */
  secret: string | null;
}

export const signedContent = (id: string, timestamp: number, body: string): Buffer => Buffer.from(`${id}.${timestamp}.${body}`, 'utf8');

/** The `webhook-signature` header value. */
export async function webhookSignatureHeader(s: WebhookSigning): Promise<string> {
  const content = signedContent(s.id, s.timestamp, s.body);
  const v1a = `v1a,${(await s.signEd25519(content)).toString('base64')}`;
  if (s.secret === null) return v1a;
  const key = Buffer.from(s.secret.slice('whsec_'.length), 'base64');
  return `v1,${createHmac('sha256', key).update(content).digest('base64')} ${v1a}`;
}
