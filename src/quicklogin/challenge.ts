/**
 * The canonical challenge a signer signs (docs/signing.md): its format lives in protocol/signing.ts, shared
 * with the signing apps of this repository; the service signs and verifies its bytes.
 */
import { signedText, type Decision } from '../protocol/signing.js';

export { CHALLENGE_VERSION, buildChallenge, type ChallengeFields, type Decision } from '../protocol/signing.js';

/** The bytes an identity's key signs: the challenge, the identity and the decision. */
export function signedMessage(challenge: string, legalId: string, decision: Decision): Buffer {
  return Buffer.from(signedText(challenge, legalId, decision), 'utf8');
}
