import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Auth, type AuthConfig } from '@auth/core';
import { decodeJwt } from 'jose';
import { describeFailure, resultPage, RpOutcomes, serveOnLoopback, type RpFailure, type RpLogin } from './rp-common.js';
import type { TokenAuthMethod } from './oidc-rp.js';

export interface AuthJsRpOptions {
  issuer: string;
  clientId: string;
  /** Absent: a public client (token endpoint auth `none`, PKCE only). */
  clientSecret?: string;
  /** Default: client_secret_basic with a secret (Auth.js's own default), none without. */
  tokenAuthMethod?: TokenAuthMethod;
  idTokenSignedResponseAlg?: 'EdDSA' | 'ES256' | 'RS256';
  /** Default 'openid profile' (Auth.js alone would ask for 'openid profile email'). */
  scope?: string;
  /** Take the profile from UserInfo rather than the ID token (Auth.js's `idToken: false`); default false. */
  userinfo?: boolean;
}

export interface AuthJsRp {
  /** The RP's origin, http://127.0.0.1:port. */
  readonly url: string;
  /** `${url}/auth/callback/tabwire`: the redirect URI to register for the client. */
  readonly redirectUri: string;
  /** The URL a browser opens to sign in; `params` go into the authorization request (prompt, max_age, login_hint …). */
  loginUrl(params?: Record<string, string>): string;
  readonly logins: RpLogin[];
  readonly failures: RpFailure[];
  /** The next completed sign-in (rejects if the next outcome is a failure); each outcome is handed out once. */
  nextLogin(ms?: number): Promise<RpLogin>;
  nextFailure(ms?: number): Promise<RpFailure>;
  close(): Promise<void>;
}

const PROVIDER = 'tabwire';

/**
 * A relying party built on Auth.js (@auth/core) with a generic OIDC provider, on a loopback port. GET /login does
 * Auth.js's CSRF step server-side and redirects to the OP (PKCE, state and nonce, checked by Auth.js); after the
 * callback the browser lands on GET /me, which shows the session's claims (`#claims`); GET /auth/session answers
 * the session as JSON. Failures Auth.js logs (an `error=` redirect, a token error, a bad ID token) are recorded,
 * and the browser lands on GET /error (`#error`).
 */
export async function startAuthJsRp(o: AuthJsRpOptions): Promise<AuthJsRp> {
  const outcomes = new RpOutcomes();
  let opError: Record<string, unknown> | undefined;
  const method = o.tokenAuthMethod ?? (o.clientSecret === undefined ? 'none' : 'client_secret_basic');
  const config: AuthConfig = {
    basePath: '/auth',
    secret: randomBytes(32).toString('base64url'),
    trustHost: true,
    providers: [
      {
        id: PROVIDER,
        name: PROVIDER,
        type: 'oidc',
        issuer: o.issuer,
        clientId: o.clientId,
        ...(o.clientSecret !== undefined && { clientSecret: o.clientSecret }),
        checks: ['pkce', 'state', 'nonce'],
        authorization: { params: { scope: o.scope ?? 'openid profile' } },
        ...(o.userinfo && { idToken: false }),
        client: {
          token_endpoint_auth_method: method,
          ...(o.idTokenSignedResponseAlg && { id_token_signed_response_alg: o.idTokenSignedResponseAlg }),
        },
      },
    ],
    callbacks: {
      // Called once with the account and profile at sign-in (the ID token already verified by Auth.js).
      jwt({ token, account, profile }) {
        if (account && profile) {
          const idToken = typeof account.id_token === 'string' ? decodeJwt(account.id_token) : {};
          const claims = { ...profile } as Record<string, unknown>;
          outcomes.login({ idToken: { ...idToken }, ...(o.userinfo && { userinfo: claims }), tokens: { ...account } });
          token.claims = claims;
        }
        return token;
      },
      session({ session, token }) {
        return { ...session, claims: token.claims } as typeof session;
      },
    },
    // Auth.js sends a failed sign-in to its sign-in or error page; both are this harness's /error.
    pages: { signIn: '/error', error: '/error' },
    logger: {
      error: (error) => {
        const sent = (error as { type?: unknown }).type === 'OAuthCallbackError' ? opError : undefined;
        opError = undefined;
        outcomes.failure(describeAuthJsError(error, sent));
      },
      warn: () => {},
      // Auth.js 0.41 drops the OP's `error=` parameters from the OAuthCallbackError it throws; it logs them at
      // debug level just before, so they are taken from there (the throw follows at once, before any other I/O).
      debug: (message, metadata) => {
        if (message === 'OAuthCallbackError') opError = metadata as Record<string, unknown>;
      },
    },
  };

  const server = await serveOnLoopback(async (req, res) => {
    const current = new URL(req.url ?? '/', server.url);
    if (req.method === 'GET' && current.pathname === '/login') return login(res, current.searchParams);
    if (req.method === 'GET' && current.pathname === '/me') return me(req, res);
    if (req.method === 'GET' && current.pathname === '/error') {
      return resultPage(res, 400, 'error', { error: current.searchParams.get('error'), failure: outcomes.failures.at(-1) });
    }
    if (current.pathname.startsWith('/auth/')) return send(res, await Auth(await toWebRequest(req, current), config));
    res.writeHead(404).end();
  });

  /** Auth.js signs in on a POST carrying its CSRF token (double-submit cookie); done here so a browser only navigates. */
  async function login(res: ServerResponse, query: URLSearchParams): Promise<void> {
    const csrf = await Auth(new Request(`${server.url}/auth/csrf`), config);
    const { csrfToken } = (await csrf.json()) as { csrfToken: string };
    const csrfCookies = csrf.headers.getSetCookie();
    const signIn = await Auth(
      new Request(`${server.url}/auth/signin/${PROVIDER}${query.size ? `?${query}` : ''}`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: csrfCookies.map((c) => c.split(';')[0]).join('; ') },
        body: new URLSearchParams({ csrfToken, callbackUrl: `${server.url}/me` }),
      }),
      config,
    );
    res.setHeader('set-cookie', [...csrfCookies, ...signIn.headers.getSetCookie()]);
    res.writeHead(signIn.status, { location: signIn.headers.get('location') ?? '' }).end();
  }

  async function me(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const answer = await Auth(new Request(`${server.url}/auth/session`, { headers: { cookie: req.headers.cookie ?? '' } }), config);
    const session = (await answer.json()) as { claims?: unknown } | null;
    if (session?.claims) resultPage(res, 200, 'claims', session.claims);
    else resultPage(res, 401, 'error', { error: 'no_session', failures: outcomes.failures });
  }

  return {
    url: server.url,
    redirectUri: `${server.url}/auth/callback/${PROVIDER}`,
    loginUrl: (params = {}) => `${server.url}/login${Object.keys(params).length ? `?${new URLSearchParams(params)}` : ''}`,
    logins: outcomes.logins,
    failures: outcomes.failures,
    nextLogin: (ms) => outcomes.nextLogin(ms),
    nextFailure: (ms) => outcomes.nextFailure(ms),
    close: server.close,
  };
}

/** node:http in, Web Request out (Auth.js speaks only Request/Response); the URL is always the RP's loopback origin. */
async function toWebRequest(req: IncomingMessage, url: URL): Promise<Request> {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(', ') : value);
  }
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const hasBody = req.method !== 'GET' && req.method !== 'HEAD';
  return new Request(url, { method: req.method ?? 'GET', headers, ...(hasBody && { body: Buffer.concat(chunks) }) });
}

async function send(res: ServerResponse, response: Response): Promise<void> {
  const cookies = response.headers.getSetCookie();
  if (cookies.length) res.setHeader('set-cookie', cookies);
  response.headers.forEach((value, name) => {
    if (name !== 'set-cookie') res.setHeader(name, value);
  });
  res.writeHead(response.status).end(Buffer.from(await response.arrayBuffer()));
}

/** The OP's `error=` parameters when Auth.js logged them (`sent`), else what the error's chain of causes holds. */
function describeAuthJsError(error: Error, sent: Record<string, unknown> | undefined): RpFailure {
  const failure = describeFailure(error);
  if (typeof sent?.error !== 'string') return failure;
  const description = sent.error_description;
  return { error: sent.error, ...(typeof description === 'string' && { description }), message: failure.message };
}
