import type { KeyObject } from 'node:crypto';
import type { Clock } from '../clock.js';
import type { Store } from '../store/stores.js';
import { createIdentity } from './create.js';
import { privateKeyFromPem } from './keys.js';

const PURPOSE = 'dev-identity';

/** Properties of the development identity the demo approves with. */
export const DEV_PROPERTIES = { FIRST: 'Ada', LAST: 'Lovelace', COUNTRY: 'GB', EMAIL: 'ada@example.org' } as const;

export interface DevIdentity {
  legalId: string;
  key: KeyObject;
}

/**
 * The development identity of the embedded profile: an Approved identity whose private key the
 * service itself holds, so the same-device approval page can sign without a signing app. Only
 * ever enabled for loopback deployments unless the operator says otherwise (config `devApproval`).
 */
export async function ensureDevIdentity(store: Store, clock: Clock, provider: string): Promise<DevIdentity> {
  const [existing] = await store.serverKeys.list(PURPOSE);
  if (existing) return { legalId: existing.kid, key: privateKeyFromPem(existing.privateKey) };
  const { identity, privateKeyPem } = await createIdentity({
    identities: store.identities,
    clock,
    provider,
    properties: { ...DEV_PROPERTIES },
    validDays: 3650,
  });
  await store.identities.transition(identity.id, 'Created', 'Approved', clock.now());
  await store.serverKeys.insert({ kid: identity.id, purpose: PURPOSE, privateKey: privateKeyPem, publicKey: identity.clientPubKey, createdAt: clock.now() });
  const [stored] = await store.serverKeys.list(PURPOSE);
  return { legalId: stored!.kid, key: privateKeyFromPem(stored!.privateKey) };
}
