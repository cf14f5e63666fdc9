import { randomUUID } from 'node:crypto';
import type { Clock } from '../clock.js';
import type { Identity, IdentityStore } from '../store/stores.js';
import { generateEd25519 } from './keys.js';

const DAY_MS = 86_400_000;
/** Property names as the reference clients use them (FIRST, LAST, PNR, COUNTRY, ...). */
export const PROPERTY_NAME = /^[A-Za-z][A-Za-z0-9_.-]{0,63}$/;

export interface CreatedIdentity {
  identity: Identity;
  /** PKCS#8 PEM; never stored by the service. */
  privateKeyPem: string;
}

/** Creates an identity with a fresh Ed25519 key pair, in state Created (operator approves it). */
export async function createIdentity(o: {
  identities: IdentityStore;
  clock: Clock;
  provider: string;
  properties: Record<string, string>;
  validDays: number;
}): Promise<CreatedIdentity> {
  for (const name of Object.keys(o.properties)) {
    if (!PROPERTY_NAME.test(name)) throw new Error(`property name "${name}" is not valid (letters, digits, _ . -)`);
  }
  const now = o.clock.now();
  const keys = generateEd25519();
  const identity: Identity = {
    id: `${randomUUID()}@${o.provider}`,
    provider: o.provider,
    state: 'Created',
    created: now,
    updated: now,
    from: now,
    to: now + o.validDays * DAY_MS,
    properties: { ...o.properties },
    attachments: [],
    clientKeyName: 'ed25519',
    clientPubKey: keys.publicKey,
    accountId: null,
  };
  await o.identities.insert(identity);
  return { identity, privateKeyPem: keys.privateKeyPem };
}
