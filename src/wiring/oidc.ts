import { randomBytes } from 'node:crypto';
import type Provider from 'oidc-provider';
import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import type { Config } from '../config/schema.js';
import { oidcRoutes, type ProviderHolder } from '../http/oidc-routes.js';
import { oidcAdapter } from '../oidc/adapter.js';
import { loadOidcLibrary } from '../oidc/library.js';
import { OidcLogin } from '../oidc/login.js';
import { buildOidcProvider, OIDC_MOUNT, OIDC_TTL, type OidcProviderDeps } from '../oidc/provider.js';
import { ensureOidcKeys, keySetId, OIDC_KEY_RELOAD_MS, publishedKeys, readOidcRings } from '../oidc/signing-keys.js';
import type { QuickLogin } from '../quicklogin/quicklogin.js';
import { newestKey } from '../store/key-ring.js';
import type { Store } from '../store/stores.js';
import { intervals, type Area } from './area.js';

/** A replaced signing key stays published this long: the ID tokens it signed expire, plus clock skew. */
const RETIRE_AFTER_MS = (OIDC_TTL.IdToken + 300) * 1000;

export interface OidcArea extends Area {
  /** The provider serving now; undefined when the OpenID Provider is off. */
  provider(): Provider | undefined;
  /** Reads the key rings again and makes a new provider if the published keys changed (tests call it after a rotation). */
  reloadKeys(): Promise<void>;
}

export interface OidcAreaDeps {
  store: Store;
  quickLogin: QuickLogin;
  clock: Clock;
  log: Logger;
}

/** A secret of the service's key store (one per purpose, the same on every node): the provider's cookie key, the pairwise salt. */
async function sharedSecret(store: Store, clock: Clock, purpose: string): Promise<string> {
  const key = await newestKey(store.serverKeys, purpose, () => {
    const secret = randomBytes(32).toString('base64url');
    return { kid: `${purpose}-${randomBytes(9).toString('base64url')}`, purpose, privateKey: secret, publicKey: '-', createdAt: clock.now() };
  });
  return key.privateKey;
}

const OFF: OidcArea = {
  provider: () => undefined,
  reloadKeys: async () => undefined,
  start: () => undefined,
  stop: async () => undefined,
  registerRoutes: async () => undefined,
};

/** The OpenID Provider at `{publicBaseUrl}/oidc` (docs/oidc.md), when `oidc` is on. */
export async function createOidcArea(config: Config, deps: OidcAreaDeps): Promise<OidcArea> {
  if (!config.oidc) return OFF;
  const { store, clock, log } = deps;
  const library = await loadOidcLibrary();
  await ensureOidcKeys(store.serverKeys, clock);
  const providerDeps: OidcProviderDeps = {
    adapter: oidcAdapter({ entries: store.oidcEntries, clients: store.oidcClients, clock, errors: library.errors }),
    identities: store.identities,
    clock,
    log,
    cookieKeys: [await sharedSecret(store, clock, 'oidc-cookie')],
    pairwiseSecret: Buffer.from(await sharedSecret(store, clock, 'oidc-pairwise'), 'base64url'),
  };
  const settings = { issuer: `${config.publicBaseUrl}${OIDC_MOUNT}`, sessionSeconds: config.oidcSessionSeconds, trustProxy: config.trustProxy };

  let serving: { id: string; provider: Provider; handle: ReturnType<Provider['callback']> } | undefined;
  const reloadKeys = async (): Promise<void> => {
    const keys = publishedKeys(await readOidcRings(store.serverKeys), clock.now(), RETIRE_AFTER_MS);
    const id = keySetId(keys);
    if (serving?.id === id) return;
    const provider = buildOidcProvider(library, providerDeps, settings, keys);
    serving = { id, provider, handle: provider.callback() };
  };
  await reloadKeys();
  const holder: ProviderHolder = { current: () => serving! };
  const login = new OidcLogin(
    { provider: () => serving!.provider, quickLogin: deps.quickLogin, codes: store.codes, entries: store.oidcEntries, clock },
    { codeValidityMs: config.codeValiditySeconds * 1000 },
  );
  // Picks up rotations by the CLI or another node, and a published key's turn to sign.
  const timers = intervals([() => void reloadKeys().catch((err: unknown) => log.error({ err }, 'OpenID Provider key reload failed')), OIDC_KEY_RELOAD_MS]);
  return {
    provider: () => serving?.provider,
    reloadKeys,
    start: () => timers.start(),
    stop: () => timers.stop(),
    registerRoutes: ({ app, limits, cookies }) =>
      oidcRoutes(app, { holder, login, limits, cookies, serviceOrigin: new URL(config.publicBaseUrl).origin }),
  };
}
