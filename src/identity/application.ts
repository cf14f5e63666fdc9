import canonicalize from 'canonicalize';

/**
 * An identity application (`POST /Agent/Legal/ApplyId`, docs/agent-api.md). The applicant proves it
 * holds the private key by signing the application; what is signed is fixed here so any client can
 * build the same bytes.
 */
export interface ApplicationAttachment {
  fileName: string;
  contentType: string;
  /** base64 */
  content: string;
}

export interface IdentityApplication {
  properties: Record<string, string>;
  attachments?: ApplicationAttachment[];
  /** Raw 32-byte Ed25519 public key, base64. */
  publicKey: string;
}

/** Content types an attachment may have (an allowlist: nothing a browser would run). */
export const ATTACHMENT_TYPES = ['image/png', 'image/jpeg', 'application/pdf'] as const;
export const MAX_ATTACHMENT_BYTES = 256 * 1024;
export const MAX_ATTACHMENTS = 5;
export const MAX_PROPERTIES = 50;

/**
 * The bytes the applicant signs with the key it applies with (Ed25519): a version line, the
 * account's user name (so an application cannot be replayed by another account), and the RFC 8785
 * canonical JSON of the application without its signature.
 */
export function applicationMessage(userName: string, application: IdentityApplication): Buffer {
  const unsigned = { properties: application.properties, attachments: application.attachments ?? [], publicKey: application.publicKey };
  return Buffer.from(`tabwire-applyid-v1\n${userName}\n${canonicalize(unsigned)}`, 'utf8');
}
