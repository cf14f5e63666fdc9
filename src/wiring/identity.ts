import type { Clock } from '../clock.js';
import type { Config } from '../config/schema.js';
import { agentLegalRoutes, type AgentLegalRoutesOptions } from '../http/agent-legal-routes.js';
import type { ApplyOptions } from '../identity/apply.js';
import { ensureDevIdentity, type DevIdentity } from '../identity/dev-identity.js';
import { IdentityQuota, LIVE_STATES } from '../identity/quota.js';
import type { Metrics } from '../metrics.js';
import type { ServerSigner } from '../quicklogin/server-signer.js';
import type { Store } from '../store/stores.js';
import type { Area } from './area.js';

export interface IdentityArea extends Area {
  apply: ApplyOptions;
  /** Identities per agent account (config identitiesPerAccount). */
  identityQuota: IdentityQuota;
  devIdentity: DevIdentity | undefined;
}

export interface IdentityAreaDeps {
  store: Store;
  clock: Clock;
  signer: ServerSigner;
  metrics: Metrics;
  /** The Agent API's bearer check (wiring/keys.ts). */
  guard: AgentLegalRoutesOptions['guard'];
}

/** Identities: applications, the per-account quota, the development identity (docs/signing.md); the Agent API's /Agent/Legal routes. */
export async function createIdentityArea(config: Config, { store, clock, signer, metrics, guard }: IdentityAreaDeps): Promise<IdentityArea> {
  const apply: ApplyOptions = {
    store,
    clock,
    provider: config.legalDomain,
    signBytes: (bytes) => signer.signBytes(bytes),
    validDays: config.identityValidDays,
    autoApprove: config.autoApproveIdentities,
  };
  const identityQuota = new IdentityQuota(
    {
      count: (accountId) => store.identities.countFor(accountId, LIVE_STATES),
      onRefused: () => metrics.quotaExceeded.inc({ limit: 'identities_per_account' }),
    },
    config.identitiesPerAccount,
  );
  const devIdentity = config.devApprovalEnabled ? await ensureDevIdentity(store, clock, config.legalDomain) : undefined;
  return {
    apply,
    identityQuota,
    devIdentity,
    async registerRoutes({ app }) {
      await app.register(agentLegalRoutes, { apply, guard, quota: identityQuota, pageSize: config.identityPageSize });
    },
    start() {},
    async stop() {},
  };
}
