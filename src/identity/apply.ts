import { randomUUID } from 'node:crypto';
import type { Clock } from '../clock.js';
import { TabwireError } from '../errors.js';
import type { Identity, Store } from '../store/stores.js';
import { applicationMessage, type IdentityApplication } from './application.js';
import { PROPERTY_NAME } from './create.js';
import { publicKeyProblem, verifyEd25519 } from './keys.js';

const DAY_MS = 86_400_000;

export interface ApplyOptions {
  store: Store;
  clock: Clock;
  provider: string;
  /** Signs attachment contents (their `Signature` in results). */
  signBytes: (bytes: Buffer) => string;
  validDays: number;
  /** Development profile: applications are approved at once instead of waiting for an operator. */
  autoApprove: boolean;
}

/**
 * Creates an identity from an application after checking the applicant signed it with the key it
 * names (proof of possession). Attachments are stored; the identity keeps their metadata.
 */
export async function applyForIdentity(
  o: ApplyOptions,
  account: { id: string; userName: string },
  application: IdentityApplication,
  signature: string,
): Promise<Identity> {
  for (const name of Object.keys(application.properties)) {
    if (!PROPERTY_NAME.test(name)) throw new TabwireError('validation_failed', `Property name "${name}" is not valid (letters, digits, _ . -)`);
  }
  const keyProblem = publicKeyProblem(application.publicKey);
  if (keyProblem) {
    throw new TabwireError('public_key_refused', `The public key is refused (${keyProblem}): apply with a freshly generated Ed25519 key (docs/signing.md)`);
  }
  if (!verifyEd25519(application.publicKey, applicationMessage(account.userName, application), signature)) {
    throw new TabwireError('signature_invalid', 'The application is not signed by the key it applies with (docs/agent-api.md)');
  }
  const now = o.clock.now();
  const id = `${randomUUID()}@${o.provider}`;
  const attachments = [];
  for (const a of application.attachments ?? []) {
    const content = Buffer.from(a.content, 'base64');
    const attachmentId = randomUUID();
    await o.store.attachments.insert({ id: attachmentId, identityId: id, contentType: a.contentType, fileName: a.fileName, content, createdAt: now });
    attachments.push({ id: attachmentId, contentType: a.contentType, fileName: a.fileName, signature: o.signBytes(content), timestamp: now });
  }
  const identity: Identity = {
    id,
    provider: o.provider,
    state: o.autoApprove ? 'Approved' : 'Created',
    created: now,
    updated: now,
    from: now,
    to: now + o.validDays * DAY_MS,
    properties: { ...application.properties },
    attachments,
    clientKeyName: 'ed25519',
    clientPubKey: application.publicKey,
    accountId: account.id,
  };
  await o.store.identities.insert(identity);
  return identity;
}
