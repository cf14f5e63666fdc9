import type { KeyObject } from 'node:crypto';
import { signEd25519 } from '../identity/keys.js';
import { buildChallenge, signedMessage, type Decision } from '../quicklogin/challenge.js';
import type { SignInfo } from '../quicklogin/quicklogin.js';
import { BINDING_HEADER } from '../quicklogin/binding.js';
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

/**
 * What the person is told when a scan-limited code (docs/relay.md) cannot be fetched: what happened and
 * what to do, in the signer's words; the service's detail follows.
 */
const FETCH_REFUSALS: Record<string, string> = {
  code_too_old:
    'This QR code is too old: the service accepts a code only if a signing app fetches it within a few seconds of it being shown. Take the code the page shows now and sign again.',
  code_bound:
    'Another signing app has already fetched this code, and only that app may sign it. If that was not you, do not go on: someone may be trying to log in as you. Otherwise take the code the page shows now.',
};

/**
 * Fetches what is to be signed, and checks the challenge says exactly what will be shown. `binding`:
 * the token an earlier fetch of a scan-limited code got (a signer that fetches again).
 */
export async function fetchSignInfo(signUrl: string, binding?: string): Promise<SignInfo> {
  const url = new URL(signUrl);
  const headers: Record<string, string> = { accept: 'application/json', ...(binding === undefined ? {} : { [BINDING_HEADER]: binding }) };
  let info: SignInfo;
  try {
    info = (await problemOrJson(await fetch(url, { headers }))) as SignInfo;
  } catch (error) {
    const explained = error instanceof SignerError && error.code !== undefined ? FETCH_REFUSALS[error.code] : undefined;
    if (explained === undefined) throw error;
    const refusal = error as SignerError;
    throw new SignerError(`${explained} (${refusal.message})`, refusal.status, refusal.code);
  }
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

/** Signs and posts the decision, with the binding token of a scan-limited code; returns the service's answer. */
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
    headers: {
      'content-type': 'application/json',
      accept: 'application/json',
      // docs/relay.md: a scan-limited code is signed only with the token its fetch was given.
      ...(info.binding === undefined ? {} : { [BINDING_HEADER]: info.binding }),
    },
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
