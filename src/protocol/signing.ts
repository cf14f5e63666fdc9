/**
 * The signing protocol's texts and the request a signing app is shown (docs/signing.md "The canonical
 * challenge", "What is signed"). One definition for the service, which builds and verifies them, and for
 * the signing apps in this repository (the web wallet), which re-build the challenge from the fields they
 * show the person, so what is shown is what is signed. Pure: no Node or DOM APIs.
 */

export const CHALLENGE_VERSION = 'tabwire-quicklogin-v1';

export interface ChallengeFields {
  code: string;
  purpose: string;
  /** Origin of the page that asked, or null when the request carried none. */
  origin: string | null;
  /** Host (host[:port]) of the service, from its public base URL. */
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

/** The text an identity's key signs (as UTF-8): the challenge, the identity and the decision. */
export const signedText = (challenge: string, legalId: string, decision: Decision): string => `${challenge}\nlegalId:${legalId}\ndecision:${decision}`;

/** What a signing app is shown before it signs: `GET {signUrl}` with Accept: application/json. */
export interface SignInfo {
  code: string;
  purpose: string;
  origin: string | null;
  requester: string | null;
  expires: number;
  challenge: string;
  propertyFilter: string | null;
  attachmentFilter: string | null;
  /**
   * Scan-limited codes only (docs/relay.md): the binding token, given to the first fetch and echoed to a
   * later fetch that presents it. The signature POST must carry it (header Tabwire-Binding).
   */
  binding?: string;
}
