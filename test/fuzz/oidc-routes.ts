import fc from 'fast-check';
import type { FuzzContext, OidcClientInfo } from './context.js';
import type { RouteSpec } from './http-cases.js';
import { hugeString, oddJsonValue, oddString, pathSegment, percentEncode, withOddChar } from './strings.js';

/**
 * The OpenID Provider's routes (docs/oidc.md): the login page's (the service's own handlers, answering
 * problem+json like every route) and the library's endpoints (OIDC_ENDPOINTS in src/http/oidc-routes.ts),
 * whose errors are OAuth 2.0 / OpenID Connect ones (oauth-oracle.ts). Valid requests carry the context's
 * live login (uid, cookies, a tab of its session) and registered client, so they reach the handlers.
 */

type Header = [string, string];

/** Without a registered client (a run against a URL), well-formed values that name nothing. */
const NO_CLIENT: OidcClientInfo & { uid: string; cookie: string; tabId: string } = {
  clientId: 'client-none', clientSecret: 'x', redirectUris: ['https://rp.example/cb'], postLogoutRedirectUris: [], uid: 'A'.repeat(21), cookie: '', tabId: 'A'.repeat(22),
};
const login = (ctx: FuzzContext) => ctx.oidc ?? NO_CLIENT;
const origin = (ctx: FuzzContext): string => ctx.allowedOrigins[0]!;
const redirects = (ctx: FuzzContext): readonly string[] => [...login(ctx).redirectUris, ...login(ctx).postLogoutRedirectUris];
const basic = (id: string, secret: string): string => `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;
const b64url = (n: number) => fc.stringMatching(new RegExp(`^[A-Za-z0-9_-]{${n}}$`));

/** A parameter list: an array is the parameter repeated (RFC 6749 §3.1: parameters must not be repeated). */
type Params = Record<string, unknown>;

/** `template` with 0–3 edits: a near-valid or odd value, a parameter dropped, repeated, or an unknown one added. */
function paramEdits(template: Params, fields: Record<string, fc.Arbitrary<unknown>>): fc.Arbitrary<Params> {
  const keys = [...new Set([...Object.keys(template), ...Object.keys(fields)])];
  type Edit = (p: Params) => void;
  const key = fc.constantFrom(...keys);
  const edit: fc.Arbitrary<Edit> = fc.oneof(
    { weight: 8, arbitrary: key.chain((k) => (fields[k] ?? oddString).map((v): Edit => (p) => void (p[k] = v))) },
    { weight: 2, arbitrary: key.map((k): Edit => (p) => void delete p[k]) },
    { weight: 2, arbitrary: key.chain((k) => (fields[k] ?? oddString).map((v): Edit => (p) => void (p[k] = [p[k] ?? '', v]))) },
    { weight: 1, arbitrary: fc.tuple(oddString, oddString).map(([k, v]): Edit => (p) => void Object.defineProperty(p, k, { value: v, enumerable: true, writable: true, configurable: true })) },
  );
  return fc.array(edit, { maxLength: 3 }).map((edits) => {
    const params = { ...template };
    for (const e of edits) e(params);
    return params;
  });
}

/** A query string (with `?`) of `params`, percent-encoded byte by byte; now and then a broken encoding after it. */
const toQuery = (params: fc.Arbitrary<Params>): fc.Arbitrary<string> =>
  fc.tuple(params, fc.oneof({ weight: 8, arbitrary: fc.constant('') }, { weight: 1, arbitrary: fc.constantFrom('&%zz=1', '&redirect_uri', '&=x', '&&&', '&client_id=%ed%a0%80', '#frag', '&__proto__[x]=1') })).map(
    ([p, tail]) =>
      '?' +
      Object.entries(p)
        .flatMap(([k, v]) => (Array.isArray(v) ? v : [v]).map((one) => `${percentEncode(k)}=${percentEncode(typeof one === 'string' ? one : (JSON.stringify(one) ?? ''))}`))
        .join('&') +
      tail,
  );

/** An authorization request of the context's client (RFC 6749 §4.1.1, OpenID Connect Core §3.1.2.1, PKCE). */
const authTemplate = (ctx: FuzzContext): Params => ({
  client_id: login(ctx).clientId, response_type: 'code', scope: 'openid profile', redirect_uri: login(ctx).redirectUris[0]!, state: 'fuzz-state', nonce: 'fuzz-nonce',
  code_challenge: 'A'.repeat(43), code_challenge_method: 'S256',
});

function authFields(ctx: FuzzContext): Record<string, fc.Arbitrary<unknown>> {
  const { clientId, redirectUris } = login(ctx);
  const uri = redirectUris[0]!;
  return {
    client_id: fc.oneof(fc.constant(clientId), fc.constantFrom('client-unknown', '', clientId.toUpperCase(), `${clientId} `), withOddChar(clientId), oddString),
    response_type: fc.oneof(fc.constantFrom('code', 'token', 'id_token', 'code id_token', 'id_token token', 'none', 'CODE', 'code code', ''), oddString),
    scope: fc.oneof(fc.constantFrom('openid', 'openid profile email phone address properties', 'profile', 'openid offline_access', 'openid openid', '', ' openid  '), withOddChar('openid'), hugeString, oddString),
    redirect_uri: fc.oneof(
      fc.constantFrom(uri, `${uri}/x`, `${uri}?a=1`, `${uri}#f`, uri.toUpperCase(), uri.replace(/^http:/, 'https:'), `${uri}/../evil`, 'https://evil.example/cb', 'javascript:alert(1)', '//evil.example/cb', '/cb', ''),
      withOddChar(uri),
      oddString,
    ),
    state: fc.oneof(oddString, hugeString),
    nonce: oddString,
    code_challenge: fc.oneof(fc.constantFrom('abc', 'A'.repeat(42), 'A'.repeat(129), ''), b64url(43), withOddChar('A'.repeat(43)), oddString),
    code_challenge_method: fc.oneof(fc.constantFrom('S256', 'plain', 's256', 'S512', ''), oddString),
    prompt: fc.oneof(fc.constantFrom('none', 'login', 'consent', 'select_account', 'none login', 'create'), oddString),
    max_age: fc.oneof(fc.constantFrom('0', '-1', '1e309', '1.5', 'x', '99999999999999999999'), oddString),
    response_mode: fc.oneof(fc.constantFrom('query', 'fragment', 'form_post', 'web_message', 'jwt', 'query.jwt'), oddString),
    request: fc.oneof(fc.constantFrom('eyJhbGciOiJub25lIn0.e30.', 'a.b.c', 'x'), oddString),
    request_uri: fc.constantFrom('urn:ietf:params:oauth:request_uri:x', 'https://evil.example/r', ''),
    claims: fc.oneof(fc.constantFrom('{"id_token":{"email":null}}', '{"userinfo":{"properties":{"essential":true}}}', '{', '[]', 'null', '{"__proto__":{"x":1}}'), oddString),
    acr_values: fc.oneof(fc.constantFrom('urn:tabwire:acr:signed-approval', 'x y'), oddString),
    id_token_hint: fc.oneof(fc.constantFrom('eyJhbGciOiJub25lIn0.e30.', 'a.b.c'), oddString),
    login_hint: oddString,
    ui_locales: fc.oneof(fc.constantFrom('de-CH en', '*'), oddString),
    resource: fc.oneof(fc.constantFrom('https://api.example', 'urn:x', 'not a uri'), oddString),
  };
}

/** Client authentication for the token and revocation endpoints: the valid one, or damaged ones (RFC 6749 §2.3.1). */
function clientAuth(ctx: FuzzContext, damaged: boolean): fc.Arbitrary<Header[]> {
  const { clientId, clientSecret } = login(ctx);
  const valid: Header[] = [['Authorization', basic(clientId, clientSecret)]];
  if (!damaged) return fc.constant(valid);
  const raw = (text: string) => `Basic ${Buffer.from(text, 'utf8').toString('base64')}`;
  return fc.oneof(
    fc.constant(valid),
    fc.constantFrom<Header[]>(
      [],
      [['Authorization', basic(clientId, 'wrong secret')]],
      [['Authorization', basic('client-unknown', clientSecret)]],
      [['Authorization', 'Basic']],
      [['Authorization', 'Basic ====']],
      [['Authorization', 'Basic !!!']],
      [['Authorization', raw(clientId)]],
      [['Authorization', raw(':')]],
      [['Authorization', raw(`${clientId}:`)]],
      [['Authorization', raw('%zz:%zz')]],
      [['Authorization', raw('%ed%a0%80:x')]],
      [['Authorization', `Basic ${'A'.repeat(10_000)}`]],
      [['Authorization', 'Bearer x']],
      [['Authorization', basic(clientId, clientSecret)], ['Authorization', basic('client-unknown', 'x')]],
    ),
    oddString.map((s): Header[] => [['Authorization', raw(`${clientId}:${s}`).replace(/[\r\n]/g, '')]]),
  );
}

const tokenFields = (ctx: FuzzContext): Record<string, fc.Arbitrary<unknown>> => ({
  grant_type: fc.oneof(
    fc.constantFrom('authorization_code', 'refresh_token', 'client_credentials', 'password', 'implicit', 'urn:ietf:params:oauth:grant-type:device_code', 'urn:openid:params:grant-type:ciba', 'urn:ietf:params:oauth:grant-type:token-exchange', 'AUTHORIZATION_CODE', ''),
    oddString,
  ),
  code: fc.oneof(b64url(43), fc.constantFrom('', 'A'.repeat(10_000)), oddString),
  redirect_uri: authFields(ctx).redirect_uri!,
  code_verifier: fc.oneof(fc.constantFrom('A'.repeat(42), 'A'.repeat(43), 'A'.repeat(128), 'A'.repeat(129), ''), withOddChar('A'.repeat(43)), oddString),
  client_id: authFields(ctx).client_id!,
  client_secret: fc.oneof(fc.constant(login(ctx).clientSecret), oddString),
  client_assertion_type: fc.constantFrom('urn:ietf:params:oauth:client-assertion-type:jwt-bearer', 'x'),
  client_assertion: fc.oneof(fc.constantFrom('eyJhbGciOiJub25lIn0.e30.', 'a.b.c'), oddString),
  refresh_token: fc.oneof(b64url(43), oddString),
  scope: authFields(ctx).scope!,
  resource: authFields(ctx).resource!,
});

/** A uid (path segment) of an interaction: the live one, a well-formed unknown one, or (damaged) an odd segment. */
const uidPath =
  (make: (uid: string) => string): RouteSpec['path'] =>
  (ctx, damaged) =>
    (damaged ? pathSegment(fc.constant(login(ctx).uid)) : fc.oneof({ weight: 3, arbitrary: fc.constant(login(ctx).uid) }, { weight: 1, arbitrary: b64url(21) })).map(make);

/** The login page's requests come from the page itself: the service's origin. */
const pageOrigin = (ctx: FuzzContext, damaged: boolean): fc.Arbitrary<Header[]> => fc.constant(damaged ? [] : [['Origin', origin(ctx)]]);
const fixedPath = (path: string): RouteSpec['path'] => (_ctx, damaged) => (damaged ? fc.constantFrom(`${path}/`, path.toUpperCase(), `${path}%2F`, `${path};x=1`, `${path}%00`, `/x/..${path}`, `${path}/..`) : fc.constant(path));
const oauth = { oauthRedirects: redirects };
const loginCookie = (ctx: FuzzContext) => login(ctx).cookie;

export const OIDC_ROUTES: readonly RouteSpec[] = [
  // The login page (the service's own handlers: problem+json from the catalogue).
  { name: 'GET /oidc-login.js', method: 'GET', path: fixedPath('/oidc-login.js') },
  { name: 'GET /oidc/interaction/{uid}', method: 'GET', cookie: loginCookie, path: uidPath((uid) => `/oidc/interaction/${uid}`) },
  { name: 'GET /oidc/interaction/{uid}/view', method: 'GET', cookie: loginCookie, path: uidPath((uid) => `/oidc/interaction/${uid}/view`) },
  {
    name: 'POST /oidc/interaction/{uid}/QuickLogin',
    method: 'POST',
    cookie: loginCookie,
    headers: pageOrigin,
    path: uidPath((uid) => `/oidc/interaction/${uid}/QuickLogin`),
    body: (ctx) => ({ mode: 'text', purpose: 'ignored', serviceId: '', tab: login(ctx).tabId }),
    fields: (ctx) => ({
      mode: fc.constantFrom('image', 'base64', 'text', 'svg', 'IMAGE', ''),
      tab: fc.oneof(fc.constant(login(ctx).tabId), fc.constant(ctx.tabId), fc.stringMatching(/^[A-Za-z0-9_-]{8,64}$/), withOddChar(login(ctx).tabId)),
      scanSeconds: fc.oneof(fc.constantFrom(1, 60, 3600, 1e9, -1, 0.5), oddJsonValue),
      propertyFilter: fc.oneof(fc.constantFrom('*', 'PNR'), oddString),
      serviceId: fc.oneof(fc.constant(ctx.serviceId ?? ''), oddString),
    }),
  },
  {
    name: 'POST /oidc/interaction/{uid}/complete',
    method: 'POST',
    cookie: loginCookie,
    headers: pageOrigin,
    path: uidPath((uid) => `/oidc/interaction/${uid}/complete`),
    body: (ctx) => ({ tab: login(ctx).tabId }),
    fields: (ctx) => ({ tab: fc.oneof(fc.constant(login(ctx).tabId), fc.constant(ctx.tabId), fc.stringMatching(/^[A-Za-z0-9_-]{8,64}$/), withOddChar(login(ctx).tabId), oddString) }),
  },

  // The library's endpoints (OAuth 2.0 / OpenID Connect errors).
  { name: 'GET /oidc/.well-known/openid-configuration', method: 'GET', ...oauth, path: fixedPath('/oidc/.well-known/openid-configuration') },
  { name: 'GET /oidc/jwks', method: 'GET', ...oauth, path: fixedPath('/oidc/jwks') },
  { name: 'GET /oidc/auth', method: 'GET', ...oauth, cookie: loginCookie, path: fixedPath('/oidc/auth'), query: (ctx) => toQuery(paramEdits(authTemplate(ctx), authFields(ctx))) },
  {
    name: 'POST /oidc/token',
    method: 'POST',
    ...oauth,
    form: true,
    path: fixedPath('/oidc/token'),
    headers: clientAuth,
    body: (ctx) => ({ grant_type: 'authorization_code', code: 'A'.repeat(43), redirect_uri: login(ctx).redirectUris[0]!, code_verifier: 'A'.repeat(43) }),
    fields: tokenFields,
  },
  {
    name: 'POST /oidc/token/revocation',
    method: 'POST',
    ...oauth,
    form: true,
    path: fixedPath('/oidc/token/revocation'),
    headers: clientAuth,
    body: () => ({ token: 'A'.repeat(43), token_type_hint: 'access_token' }),
    fields: (ctx) => ({ token: fc.oneof(b64url(43), oddString), token_type_hint: fc.oneof(fc.constantFrom('access_token', 'refresh_token', 'id_token', ''), oddString), client_id: authFields(ctx).client_id! }),
  },
  {
    name: 'GET /oidc/me',
    method: 'GET',
    ...oauth,
    path: fixedPath('/oidc/me'),
    // RFC 6750 §2: the token in the header, or (refused by this provider) in the query.
    headers: (_ctx, damaged) =>
      damaged
        ? fc.oneof(fc.constantFrom<Header[]>([], [['Authorization', 'Bearer']], [['Authorization', 'Bearer a b']], [['Authorization', `Bearer ${'A'.repeat(10_000)}`]], [['Authorization', 'DPoP x']]), oddString.map((s): Header[] => [['Authorization', `Bearer ${s.replace(/[\r\n]/g, '')}`]]))
        : b64url(43).map((t): Header[] => [['Authorization', `Bearer ${t}`]]),
    query: () => fc.oneof({ weight: 4, arbitrary: fc.constant('') }, { weight: 1, arbitrary: fc.oneof(b64url(43), oddString).map((t) => `?access_token=${percentEncode(t)}`) }),
  },
  { name: 'POST /oidc/me', method: 'POST', ...oauth, form: true, path: fixedPath('/oidc/me'), body: () => ({ access_token: 'A'.repeat(43) }), fields: () => ({ access_token: fc.oneof(b64url(43), oddString) }) },
  {
    name: 'GET /oidc/session/end',
    method: 'GET',
    ...oauth,
    cookie: loginCookie,
    path: fixedPath('/oidc/session/end'),
    query: (ctx) =>
      toQuery(
        paramEdits(
          { client_id: login(ctx).clientId, state: 'fuzz' },
          {
            client_id: authFields(ctx).client_id!,
            post_logout_redirect_uri: fc.oneof(fc.constantFrom(...login(ctx).postLogoutRedirectUris, ...login(ctx).redirectUris, 'https://evil.example/out', '//evil.example', ''), oddString),
            id_token_hint: authFields(ctx).id_token_hint!,
            logout_hint: oddString,
            ui_locales: authFields(ctx).ui_locales!,
          },
        ),
      ),
  },
  {
    name: 'POST /oidc/session/end/confirm',
    method: 'POST',
    ...oauth,
    form: true,
    cookie: loginCookie,
    path: fixedPath('/oidc/session/end/confirm'),
    body: () => ({ xsrf: 'A'.repeat(43), logout: 'yes' }),
    fields: () => ({ xsrf: fc.oneof(b64url(43), oddString), logout: fc.oneof(fc.constantFrom('yes', 'no', ''), oddString) }),
  },
  {
    name: 'GET /oidc/session/end/success',
    method: 'GET',
    ...oauth,
    path: fixedPath('/oidc/session/end/success'),
    query: (ctx) => fc.oneof(fc.constant(''), fc.constant(`?client_id=${percentEncode(login(ctx).clientId)}`), oddString.map((s) => `?client_id=${percentEncode(s)}`)),
  },
  // Last: resuming the live login ends its interaction (the library destroys it), so the routes above come first.
  { name: 'GET /oidc/auth/{uid}', method: 'GET', ...oauth, cookie: loginCookie, path: uidPath((uid) => `/oidc/auth/${uid}`) },
];
