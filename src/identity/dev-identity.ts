import type { KeyObject } from 'node:crypto';
import type { Clock } from '../clock.js';
import { newestKey } from '../store/key-ring.js';
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
  const key = await newestKey(
    store.serverKeys,
    PURPOSE,
    async () => {
      const { identity, privateKeyPem } = await createIdentity({
        identities: store.identities,
        clock,
        provider,
        properties: { ...DEV_PROPERTIES },
        validDays: 3650,
      });
      await store.identities.transition(identity.id, 'Created', 'Approved', clock.now());
      return { kid: identity.id, purpose: PURPOSE, privateKey: privateKeyPem, publicKey: identity.clientPubKey, createdAt: clock.now() };
    },
    // Another node created the development identity first: the one made here is never used, so it may not sign.
    async (lost) => {
      await store.identities.transition(lost.kid, 'Approved', 'Obsoleted', clock.now());
    },
  );
  return { legalId: key.kid, key: privateKeyFromPem(key.privateKey) };
}
