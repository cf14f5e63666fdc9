import { createHmac, sign, type KeyObject } from 'node:crypto';

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
  privateKey: KeyObject;
  /** The backend's own `whsec_…` secret, when it registered one. */
  secret: string | null;
}

export const signedContent = (id: string, timestamp: number, body: string): Buffer => Buffer.from(`${id}.${timestamp}.${body}`, 'utf8');

/** Ed25519 on libuv's thread pool (`crypto.sign` with a callback): ~45 µs of signing off the event loop. */
const ed25519 = (content: Buffer, key: KeyObject): Promise<Buffer> =>
  new Promise((resolve, reject) => sign(null, content, key, (err, signature) => (err ? reject(err) : resolve(signature))));

/** The `webhook-signature` header value. */
export async function webhookSignatureHeader(s: WebhookSigning): Promise<string> {
  const content = signedContent(s.id, s.timestamp, s.body);
  const v1a = `v1a,${(await ed25519(content, s.privateKey)).toString('base64')}`;
  if (s.secret === null) return v1a;
  const key = Buffer.from(s.secret.slice('whsec_'.length), 'base64');
  return `v1,${createHmac('sha256', key).update(content).digest('base64')} ${v1a}`;
}
