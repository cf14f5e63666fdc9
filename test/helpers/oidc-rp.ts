import type { ServerResponse } from 'node:http';
import * as oidc from 'openid-client';
import type { OidcTokenAuth } from '../../src/store/oidc-store.js';
import { AwaitableQueue, describeFailure, resultPage, RpOutcomes, serveOnLoopback, type RpFailure, type RpLogin } from './rp-common.js';

export { type RpFailure, type RpLogin } from './rp-common.js';
export { exchangeCode, fetchMetadata, tokenRequest, type RawAnswer, type RawClient } from './token-requests.js';

/** How the client authenticates at the token endpoint (OpenID Connect Core §9). */
export type TokenAuthMethod = OidcTokenAuth;

export interface OpenidClientRpOptions {
  /** The OP's issuer identifier; its metadata is read from `${issuer}/.well-known/openid-configuration`. */
  issuer: string;
  clientId: string;
  /** Absent: a public client (token endpoint auth `none`, PKCE only). */
  clientSecret?: string;
  /** Default: client_secret_basic with a secret, none without. */
  tokenAuthMethod?: TokenAuthMethod;
  /** The alg the client registered for ID tokens; openid-client expects RS256 unless told. */
  idTokenSignedResponseAlg?: 'EdDSA' | 'ES256' | 'RS256';
  /** Default 'openid profile'. */
  scope?: string;
  /** Path of the redirect URI on the RP's origin; default '/callback'. */
  redirectPath?: string;
  /** Fetch UserInfo after the code exchange (Core §5.3); default true. */
  userinfo?: boolean;
}

/** An authorization code the RP received and left unredeemed (while `redeem` is false), for a raw exchange. */
export interface HeldCode {
  code: string;
  codeVerifier: string;
  redirectUri: string;
  state: string;
  nonce: string;
}

/** What the RP kept of a completed sign-in, enough to replay its code at the token endpoint. */
export interface OpenidClientLogin extends RpLogin {
  code: string;
  codeVerifier: string;
  redirectUri: string;
}

export interface OpenidClientRp {
  /** The RP's origin, http://127.0.0.1:port. */
  readonly url: string;
  /** `${url}${redirectPath}`: the redirect URI to register for the client. */
  readonly redirectUri: string;
  /** The OP's metadata as discovered (token_endpoint, userinfo_endpoint, jwks_uri …). */
  readonly metadata: oidc.ServerMetadata;
  /**
   * The URL a browser opens to sign in. `params` go into the authorization request (prompt, max_age, login_hint,
   * scope, ui_locales …); state, nonce and the PKCE challenge are always the RP's own.
   */
  loginUrl(params?: Record<string, string>): string;
  /** False: the callback redeems nothing; it keeps the code for `nextHeldCode()` (default true). */
  redeem: boolean;
  nextHeldCode(ms?: number): Promise<HeldCode>;
  readonly logins: OpenidClientLogin[];
  readonly failures: RpFailure[];
  /** The next completed sign-in (rejects if the next outcome is a failure); each outcome is handed out once. */
  nextLogin(ms?: number): Promise<OpenidClientLogin>;
  nextFailure(ms?: number): Promise<RpFailure>;
  close(): Promise<void>;
}

/**
 * What an authorization request left for its callback, found again by its state in the RP's memory (not bound to
 * a browser cookie, as a production RP would: a test may finish a login in another context or without a browser).
 */
interface Pending {
  codeVerifier: string;
  nonce: string;
  maxAge?: number;
}

/**
 * A relying party built on openid-client v6 on a loopback port: GET /login redirects to the OP with PKCE S256,
 * state and nonce; GET <redirectPath> redeems the code (verifying the ID token against the OP's JWKS), reads
 * UserInfo, records the sign-in and shows the claims (`#claims`), or records the failure and shows it (`#error`).
 */
export async function startOpenidClientRp(o: OpenidClientRpOptions): Promise<OpenidClientRp> {
  const method = o.tokenAuthMethod ?? (o.clientSecret === undefined ? 'none' : 'client_secret_basic');
  const metadata: Partial<oidc.ClientMetadata> = {
    token_endpoint_auth_method: method,
    ...(o.clientSecret !== undefined && { client_secret: o.clientSecret }),
    ...(o.idTokenSignedResponseAlg && { id_token_signed_response_alg: o.idTokenSignedResponseAlg }),
  };
  // openid-client refuses http:// endpoints unless told; the OP under test is on loopback.
  const config = await oidc.discovery(new URL(o.issuer), o.clientId, metadata, clientAuth(method, o.clientSecret), {
    execute: [oidc.allowInsecureRequests],
  });
  const outcomes = new RpOutcomes<OpenidClientLogin>();
  const pending = new Map<string, Pending>();
  const held = new AwaitableQueue<HeldCode>('authorization code held by the relying party');
  const redirectPath = o.redirectPath ?? '/callback';
  let redirectUri = '';
  let redeem = true;

  async function login(res: ServerResponse, query: URLSearchParams): Promise<void> {
    const codeVerifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const nonce = oidc.randomNonce();
    const maxAge = query.get('max_age');
    pending.set(state, { codeVerifier, nonce, ...(maxAge !== null && { maxAge: Number(maxAge) }) });
    const parameters = {
      redirect_uri: redirectUri,
      scope: o.scope ?? 'openid profile',
      ...Object.fromEntries(query),
      code_challenge: await oidc.calculatePKCECodeChallenge(codeVerifier),
      code_challenge_method: 'S256',
      state,
      nonce,
    };
    res.writeHead(302, { location: oidc.buildAuthorizationUrl(config, parameters).href }).end();
  }

  async function callback(res: ServerResponse, current: URL): Promise<void> {
    const state = current.searchParams.get('state') ?? '';
    const request = pending.get(state);
    pending.delete(state);
    const code = current.searchParams.get('code');
    if (!redeem && request && code) {
      held.push({ code, codeVerifier: request.codeVerifier, redirectUri, state, nonce: request.nonce });
      return resultPage(res, 200, 'code', { held: true });
    }
    try {
      if (!request) throw new Error(`the callback's state ${JSON.stringify(state)} matches no authorization request of this RP`);
      const tokens = await oidc.authorizationCodeGrant(config, current, {
        pkceCodeVerifier: request.codeVerifier,
        expectedState: state,
        expectedNonce: request.nonce,
        idTokenExpected: true,
        ...(request.maxAge !== undefined && { maxAge: request.maxAge }),
      });
      const idToken = { ...tokens.claims()! };
      const userinfo = o.userinfo === false ? undefined : { ...(await oidc.fetchUserInfo(config, tokens.access_token, String(idToken.sub))) };
      const record: OpenidClientLogin = {
        idToken,
        ...(userinfo && { userinfo }),
        tokens: { ...tokens },
        code: code!,
        codeVerifier: request.codeVerifier,
        redirectUri,
      };
      outcomes.login(record);
      resultPage(res, 200, 'claims', { idToken, userinfo });
    } catch (error) {
      const failure = describeFailure(error);
      outcomes.failure(failure);
      resultPage(res, 400, 'error', failure);
    }
  }

  const server = await serveOnLoopback(async (req, res) => {
    const current = new URL(req.url ?? '/', server.url);
    if (req.method === 'GET' && current.pathname === '/login') return login(res, current.searchParams);
    if (req.method === 'GET' && current.pathname === redirectPath) return callback(res, current);
    res.writeHead(404).end();
  });
  redirectUri = `${server.url}${redirectPath}`;

  return {
    url: server.url,
    redirectUri,
    metadata: config.serverMetadata(),
    loginUrl: (params = {}) => `${server.url}/login${Object.keys(params).length ? `?${new URLSearchParams(params)}` : ''}`,
    logins: outcomes.logins,
    failures: outcomes.failures,
    nextLogin: (ms) => outcomes.nextLogin(ms),
    nextFailure: (ms) => outcomes.nextFailure(ms),
    get redeem() {
      return redeem;
    },
    set redeem(value: boolean) {
      redeem = value;
    },
    nextHeldCode: (ms) => held.next(ms),
    close: server.close,
  };
}

function clientAuth(method: TokenAuthMethod, secret: string | undefined): oidc.ClientAuth {
  switch (method) {
    case 'client_secret_basic':
      return oidc.ClientSecretBasic(secret);
    case 'client_secret_post':
      return oidc.ClientSecretPost(secret);
    case 'none':
      return oidc.None();
  }
}
