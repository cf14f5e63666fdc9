import type { Clock } from '../clock.js';
import type { Config } from '../config/schema.js';
import type { ApplyOptions } from '../identity/apply.js';
import { ensureDevIdentity, type DevIdentity } from '../identity/dev-identity.js';
import { IdentityQuota, LIVE_STATES } from '../identity/quota.js';
import type { Metrics } from '../metrics.js';
import type { ServerSigner } from '../quicklogin/server-signer.js';
import type { Store } from '../store/stores.js';
import type { Lifecycle } from './area.js';

export interface IdentityArea extends Lifecycle {
  apply: ApplyOptions;
  /** Identities per agent account (config identitiesPerAccount). */
  identityQuota: IdentityQuota;
  devIdentity: DevIdentity | undefined;
}

/** Identities: applications, the per-account quota, the development identity (docs/signing.md). */
export async function createIdentityArea(o: { config: Config; store: Store; clock: Clock; signer: ServerSigner; metrics: Metrics }): Promise<IdentityArea> {
  const { config, store, clock } = o;
  const apply: ApplyOptions = {
    store,
    clock,
    provider: config.legalDomain,
    signBytes: (bytes) => o.signer.signBytes(bytes),
    validDays: config.identityValidDays,
    autoApprove: config.autoApproveIdentities,
  };
  const identityQuota = new IdentityQuota({
    count: (accountId) => store.identities.countFor(accountId, LIVE_STATES),
    limit: config.identitiesPerAccount,
    onRefused: () => o.metrics.quotaExceeded.inc({ limit: 'identities_per_account' }),
  });
  const devIdentity = config.devApprovalEnabled ? await ensureDevIdentity(store, clock, config.legalDomain) : undefined;
  return { apply, identityQuota, devIdentity, start() {}, async stop() {} };
}
