/**
 * The signed texts of the protocol, built exactly as the service verifies them (docs/signing.md "The
 * canonical challenge" and "What is signed", docs/agent-api.md "Proof of possession"). The wallet
 * re-builds the challenge from the fields it shows and refuses to sign when the service's differs:
 * what the person saw is what they sign. Imports nothing but ./canonical-json (unit-tested against the
 * service's own builders).
 */
import { canonicalJson } from './canonical-json.js';

export const CHALLENGE_VERSION = 'tabwire-quicklogin-v1';

export type Decision = 'approve' | 'reject';

export interface ChallengeFields {
  code: string;
  purpose: string;
  origin: string | null;
  /** host[:port] of the service the request was fetched from. */
  service: string;
  expires: number;
  nonce: string;
}

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

/** The nonce line of a challenge the service sent ('' when it has none, so the re-built one differs). */
export const nonceOf = (challenge: string): string =>
  challenge.split('\n').find((l) => l.startsWith('nonce:'))?.slice('nonce:'.length) ?? '';

/** The text an identity's key signs for a decision (encode as UTF-8). */
export const signedText = (challenge: string, legalId: string, decision: Decision): string =>
  `${challenge}\nlegalId:${legalId}\ndecision:${decision}`;

export interface Application {
  properties: Record<string, string>;
  attachments?: Array<{ fileName: string; contentType: string; content: string }>;
  publicKey: string;
}

/** The text the applicant signs with the key it applies with (`ApplyId`; encode as UTF-8). */
export function applicationText(userName: string, application: Application): string {
  const unsigned = { properties: application.properties, attachments: application.attachments ?? [], publicKey: application.publicKey };
  return `tabwire-applyid-v1\n${userName}\n${canonicalJson(unsigned)}`;
}
