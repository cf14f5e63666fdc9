import type { KeyObject } from 'node:crypto';
import { signEd25519 } from '../identity/keys.js';
import { buildChallenge, signedMessage, type Decision } from '../quicklogin/challenge.js';
import type { SignInfo } from '../quicklogin/quicklogin.js';
import { printable } from './printable.js';

/** The reference signer's protocol side (docs/signing.md), usable in-process by tests. */

export class SignerError extends Error {
  override name = 'SignerError';
  constructor(
    message: string,
    readonly status?: number,
    readonly code?: string,
  ) {
    super(message);
  }
}

/** The JSON body of a successful answer; a problem+json refusal becomes a SignerError with its status and code. */
export async function problemOrJson(response: Response): Promise<unknown> {
  const body: unknown = await response.json().catch(() => undefined);
  if (!response.ok) {
    const problem = (body ?? {}) as { detail?: string; code?: string };
    throw new SignerError(problem.detail ?? `HTTP ${response.status}`, response.status, problem.code);
  }
  return body;
}

/** Fetches what is to be signed, and checks the challenge says exactly what will be shown. */
export async function fetchSignInfo(signUrl: string): Promise<SignInfo> {
  const url = new URL(signUrl);
  const info = (await problemOrJson(await fetch(url, { headers: { accept: 'application/json' } }))) as SignInfo;
  const expected = buildChallenge({
    code: info.code,
    purpose: info.purpose,
    origin: info.origin,
    service: url.host,
    expires: info.expires,
    nonce: info.challenge.split('\n').find((l) => l.startsWith('nonce:'))?.slice('nonce:'.length) ?? '',
  });
  if (expected !== info.challenge) {
    throw new SignerError('The challenge does not match the request shown; refusing to sign');
  }
  return info;
}

/** Signs and posts the decision; returns the service's answer. */
export async function postDecision(
  signUrl: string,
  info: SignInfo,
  legalId: string,
  key: KeyObject,
  decision: Decision,
): Promise<{ state: string }> {
  const signature = signEd25519(key, signedMessage(info.challenge, legalId, decision));
  const response = await fetch(signUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify({ legalId, signature, decision }),
  });
  return (await problemOrJson(response)) as { state: string };
}

/** One line a person reads before deciding. */
export function describeRequest(info: SignInfo): string {
  const from = printable(info.origin ?? 'a client without an origin');
  const until = new Date(info.expires * 1000).toISOString();
  return `${from} asks: "${printable(info.purpose)}" (valid until ${until})`;
}
