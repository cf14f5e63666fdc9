/**
 * The signed texts of the protocol, built exactly as the service verifies them (docs/signing.md "The
 * canonical challenge" and "What is signed", docs/agent-api.md "Proof of possession"). The wallet
 * re-builds the challenge from the fields it shows and refuses to sign when the service's differs:
 * what the person saw is what they sign. Imports only ./canonical-json and the protocol's shared texts (../protocol/signing.ts).
 */
import { canonicalJson } from './canonical-json.js';

export { CHALLENGE_VERSION, buildChallenge, signedText, type ChallengeFields, type Decision } from '../protocol/signing.js';

/** The nonce line of a challenge the service sent ('' when it has none, so the re-built one differs). */
export const nonceOf = (challenge: string): string =>
  challenge.split('\n').find((l) => l.startsWith('nonce:'))?.slice('nonce:'.length) ?? '';

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
