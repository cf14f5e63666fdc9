/**
 * The canonical challenge a signer signs (docs/signing.md). Built by the service, re-built by the
 * signer from the fields it shows the person, so what is shown is what is signed.
 */

export const CHALLENGE_VERSION = 'tabwire-quicklogin-v1';

export interface ChallengeFields {
  code: string;
  purpose: string;
  /** Origin of the page that asked, or null when the request carried none. */
  origin: string | null;
  /** Host of the service (from its public base URL). */
  service: string;
  /** Unix seconds. */
  expires: number;
  nonce: string;
}

export type Decision = 'approve' | 'reject';

/** Line format; free text (purpose) is a JSON string so it can never break a line. */
export function buildChallenge(f: ChallengeFields): string {
  return [
    CHALLENGE_VERSION,
    `code:${f.code}`,
    `purpose:${JSON.stringify(f.purpose)}`,
    `origin:${f.origin ?? '-'}`,
    `service:${f.service}`,
    `expires:${f.expires}`,
    `nonce:${f.nonce}`,
  ].join('\n');
}

/** The bytes an identity's key signs: the challenge, the identity and the decision. */
export function signedMessage(challenge: string, legalId: string, decision: Decision): Buffer {
  return Buffer.from(`${challenge}\nlegalId:${legalId}\ndecision:${decision}`, 'utf8');
}
