import { createHmac } from 'node:crypto';
import type Provider from 'oidc-provider';
import type { AdapterConstructor, Account, ClientLike, ErrorOut, KoaContextWithOIDC } from 'oidc-provider';
import type { OidcLibrary } from './library.js';
import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import { maySign } from '../identity/identity.js';
import type { IdentityStore } from '../store/stores.js';
import { allowedProperties, claimsOf, SCOPE_CLAIMS, SUPPORTED_SCOPES } from './claims.js';
import { errorPage, logoutPage, loggedOutPage } from './pages.js';
import { ID_TOKEN_ALGS, type SigningJwk } from './signing-keys.js';

/** Where the provider is mounted under the service's base URL; the issuer is `{publicBaseUrl}/oidc`. */
export const OIDC_MOUNT = '/oidc';

/**
 * `acr` of every login (OpenID Connect Core §2): the person approved this login in a signing app by
 * signing it with the private key of an identity the operator approved.
 */
export const ACR = 'urn:tabwire:acr:signed-approval';
/** `amr` (RFC 8176 §2): proof of possession of a software-held key (`swk`), and the person's own act (`user`). */
export const AMR = ['swk', 'user'];

/** Token lifetimes in seconds (docs/oidc.md "Lifetimes"). */
export const OIDC_TTL = {
  AuthorizationCode: 60,
  IdToken: 3600,
  AccessToken: 3600,
  RefreshToken: 14 * 24 * 3600,
  Interaction: 600,
  Grant: 14 * 24 * 3600,
} as const;

export interface OidcProviderDeps {
  adapter: AdapterConstructor;
  identities: Pick<IdentityStore, 'get'>;
  clock: Clock;
  log: Logger;
  /** Keys of the provider's signed cookies, newest first (one secret in the store, the same on every node). */
  cookieKeys: string[];
  /** The secret of pairwise subject identifiers (OpenID Connect Core §8.1). */
  pairwiseSecret: Buffer;
}

export interface OidcProviderSettings {
  issuer: string;
  /** How long an OpenID Provider session lasts (config `oidcSessionSeconds`). */
  sessionSeconds: number;
  /** Take the scheme and host from X-Forwarded-* (config `trustProxy`). */
  trustProxy: boolean;
}

/** The relying party's own `sub` for an identity: stable per sector (the redirect URIs' host), unlinkable across sectors. */
function pairwiseIdentifier(secret: Buffer) {
  return async (_ctx: KoaContextWithOIDC, accountId: string, client: ClientLike): Promise<string> =>
    createHmac('sha256', secret).update(`${client.sectorIdentifier ?? ''}\n${accountId}`).digest('base64url');
}

/** An identity as the provider's account: `sub` is the identity's id; claims are its properties the scopes disclose. */
function findAccount(deps: Pick<OidcProviderDeps, 'identities' | 'clock'>) {
  return async (_ctx: KoaContextWithOIDC, sub: string): Promise<Account | undefined> => {
    const identity = await deps.identities.get(sub);
    // An identity revoked or expired since it approved gets no more tokens or userinfo.
    if (!identity || !maySign(identity, deps.clock.now())) return undefined;
    return {
      accountId: sub,
      claims: (_use, scope) => ({ sub, ...claimsOf(identity.properties, allowedProperties(scope.split(' '))) }),
    };
  };
}

/**
 * The OpenID Provider (oidc-provider, docs/oidc.md): authorization code flow with PKCE, discovery, JWKS,
 * userinfo, revocation and RP-initiated logout; logins happen on the QR page at the interaction URL. Made
 * again whenever the published keys change (the library takes its keys when it is made); everything it
 * keeps is in the adapter, so a new instance carries on where the old one was.
 */
export function buildOidcProvider(library: OidcLibrary, deps: OidcProviderDeps, settings: OidcProviderSettings, keys: SigningJwk[]): Provider {
  // acr and amr under openid: the library puts a claim in the ID token only through a scope or the claims
  // parameter, and how the person logged in is what a relying party checks (OpenID Connect Core §2).
  const claims: Record<string, readonly string[] | null> = { ...SCOPE_CLAIMS, openid: [...SCOPE_CLAIMS.openid!, 'acr', 'amr', 'auth_time'], acr: null, amr: null, auth_time: null, sid: null, iss: null };
  const provider = new library.default(settings.issuer, {
    adapter: deps.adapter,
    jwks: { keys },
    findAccount: findAccount(deps),
    claims,
    scopes: SUPPORTED_SCOPES,
    subjectTypes: ['public', 'pairwise'],
    pairwiseIdentifier: pairwiseIdentifier(deps.pairwiseSecret),
    acrValues: [ACR],
    // The scopes' claims go in the ID token too: many relying parties read only the ID token.
    conformIdTokenClaims: false,
    responseTypes: ['code'],
    clientDefaults: {
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
      id_token_signed_response_alg: 'EdDSA',
    },
    enabledJWA: {
      idTokenSigningAlgValues: [...ID_TOKEN_ALGS],
      userinfoSigningAlgValues: [...ID_TOKEN_ALGS],
      requestObjectSigningAlgValues: [...ID_TOKEN_ALGS],
    },
    cookies: {
      keys: deps.cookieKeys,
      long: { httpOnly: true, sameSite: 'lax', signed: true },
      short: { httpOnly: true, sameSite: 'lax', signed: true },
    },
    ttl: { ...OIDC_TTL, Session: settings.sessionSeconds },
    features: {
      devInteractions: { enabled: false },
      registration: { enabled: false },
      // Only the endpoints the service routes (http/oidc-routes.ts OIDC_ENDPOINTS) are on.
      pushedAuthorizationRequests: { enabled: false },
      // Access tokens are for UserInfo only: no resource servers to name with `resource` (RFC 8707).
      resourceIndicators: { enabled: false },
      revocation: { enabled: true },
      userinfo: { enabled: true },
      rpInitiatedLogout: { enabled: true, logoutSource: logoutPage, postLogoutSuccessSource: loggedOutPage },
    },
    interactions: { url: (_ctx: KoaContextWithOIDC, interaction: { uid: string }) => `${OIDC_MOUNT}/interaction/${interaction.uid}` },
    renderError: (ctx: KoaContextWithOIDC, out: ErrorOut) => errorPage(ctx, out),
    // Browsers may call UserInfo, and a public client (a page with PKCE) the token endpoint, only from the
    // origins of the client's own redirect URIs; never from anywhere (the library's default, stated here).
    clientBasedCORS: (ctx: KoaContextWithOIDC, origin: string, client: ClientLike & { clientAuthMethod?: string }) =>
      origin !== 'null' && (ctx.oidc.route === 'userinfo' || client.clientAuthMethod === 'none') && (client.redirectUris ?? []).some((uri) => URL.canParse(uri) && new URL(uri).origin === origin),
  });
  provider.proxy = settings.trustProxy;
  provider.on('server_error', (_ctx, err) => deps.log.error({ err }, 'OpenID Provider error'));
  return provider;
}
