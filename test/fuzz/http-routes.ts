import fc from 'fast-check';
import { attachments, b64, callbackUrl, jid, properties, xmlPayloads } from './field-values.js';
import { codeSegment, type RouteSpec } from './http-cases.js';
import { OIDC_ROUTES } from './oidc-routes.js';
import { oddChar, oddJsonValue, oddString, pathSegment, percentEncode, withOddChar } from './strings.js';

/**
 * Every HTTP route of the service (src/http/*.ts), each with its valid request shape and the
 * near-valid values that reach past the schema into the handler. A route added to the service
 * belongs here too, or the fuzzer does not drive it.
 */

/** A fixed path, or (damaged) the same with a trailing slash, other case, dot segments, a long tail, absolute form. */
function pathVariants(path: string): RouteSpec['path'] {
  return (_ctx, damaged) =>
    damaged
      ? fc.constantFrom(
          `${path}/`, path.toLowerCase(), path.toUpperCase(), `/${path}`, `${path}/.`, `${path}/..`, `${path}%2F`, `${path};x=1`,
          `${path}%00`, `/./${path.slice(1)}`, `/x/..${path}`, `${path}/${'a'.repeat(9_000)}`, `http://127.0.0.1${path}`, `*`,
        )
      : fc.constant(path);
}

/** Paths with a login code: the live code or a well-formed unknown one, or (damaged) a damaged segment. */
const codePath =
  (make: (code: string) => string): RouteSpec['path'] =>
  (ctx, damaged) =>
    (damaged ? pathSegment(fc.constant('x')) : codeSegment(ctx)).map(make);

export const HTTP_ROUTES: readonly RouteSpec[] = [
  // Operators and the demo page.
  { name: 'GET /healthz', method: 'GET', path: pathVariants('/healthz') },
  { name: 'GET /readyz', method: 'GET', path: pathVariants('/readyz') },
  { name: 'GET /metrics', method: 'GET', path: pathVariants('/metrics') },
  { name: 'GET /', method: 'GET', path: (_ctx, damaged) => (damaged ? fc.constantFrom('//', '/index.html', '/demo.js/', '/%2e/demo.js') : fc.constantFrom('/', '/demo.js', '/sign.js', '/style.css', '/favicon.png', '/favicon.ico')) },
  // The OpenAPI document and its rendered reference, served by @fastify/swagger-ui (docs/openapi.md).
  { name: 'GET /openapi.json', method: 'GET', path: pathVariants('/openapi.json') },
  {
    name: 'GET /docs',
    method: 'GET',
    path: (_ctx, damaged) =>
      damaged
        ? fc.constantFrom('/docs/static/..%2f..%2fpackage.json', '/docs/static/%2e%2e/%2e%2e/package.json', '/docs/static/nope.js', '/docs//', '/docs/static/', '/docs/static/index.html/')
        : fc.constantFrom('/docs', '/docs/', '/docs/static/swagger-ui.css', '/docs/static/swagger-initializer.js', '/docs/json'),
  },
  {
    name: 'GET /Events.js',
    method: 'GET',
    path: pathVariants('/Events.js'),
    headers: () => fc.oneof(fc.constant<Array<[string, string]>>([]), fc.constantFrom('*', '"x"', 'W/"x", *', ',,,', '"'.repeat(100)).map((v): Array<[string, string]> => [['If-None-Match', v]])),
  },
  {
    name: 'GET /.well-known/*',
    method: 'GET',
    path: (_ctx, damaged) =>
      damaged
        ? fc.constantFrom('/.well-known/', '/.well-known/../healthz', '/.well-known/tabwire/', '/.well-known/jwks.json/x')
        : fc.constantFrom('/.well-known/tabwire/result-keys', '/.well-known/tabwire/webhook-key', '/.well-known/jwks.json'),
  },
  { name: 'GET /QuickLogin/DevIdentity', method: 'GET', path: pathVariants('/QuickLogin/DevIdentity') },
  // The web wallet (docs/wallet.md): /wallet redirects keeping its query (an app link's ?sign=…) in Location.
  {
    name: 'GET /wallet',
    method: 'GET',
    path: () => fc.constant('/wallet'),
    query: () =>
      fc.oneof(
        fc.constant('?sign=https%3A%2F%2F127.0.0.1%2FQuickLogin%2FSign%2FAAAA'),
        oddString.map((s) => `?sign=${percentEncode(s)}`),
        fc.constantFrom('', '?', '?sign', '?sign=a&sign=b', '?sign=%zz', '?sign=%0d%0aSet-Cookie:%20x=1', '?sign=%ed%a0%80', `?sign=${'s'.repeat(9_000)}`, '?__proto__=x', '?#x'),
      ),
  },
  {
    name: 'GET /wallet/*',
    method: 'GET',
    path: (_ctx, damaged) =>
      damaged
        ? fc.constantFrom('/wallet//', '/wallet/index.html', '/wallet/nope.js', '/wallet/..%2f..%2fpackage.json', '/wallet/%2e%2e/%2e%2e/package.json', '/wallet/wallet.js/', '/wallet/%00', '/wallet/.', `/wallet/${'w'.repeat(9_000)}`)
        : fc.constantFrom('/wallet/', '/wallet/wallet.js', '/wallet/jsqr.js', '/wallet/wallet.css', '/wallet/sw.js', '/wallet/icon-192.png', '/wallet/manifest.webmanifest'),
  },

  { name: 'unknown path', method: 'GET', path: () => fc.oneof(oddString.map((s) => `/${percentEncode(s)}`), pathSegment(fc.constant('nothing-here')).map((s) => `/${s}`)) },

  // Client event channel over HTTP.
  { name: 'GET /ClientEventsWS (no upgrade)', method: 'GET', path: pathVariants('/ClientEventsWS'), cookie: true },
  {
    name: 'POST /ClientEvents',
    method: 'POST',
    path: pathVariants('/ClientEvents'),
    body: () => 'http://127.0.0.1/page',
    cookie: false,
    // Valid: a new tab of a new session (answered at once with the session cookie). Damaged: other tab ids and resume points.
    headers: (ctx, damaged) =>
      damaged
        ? fc
            .tuple(
              fc.oneof(
                fc.constant<Array<[string, string]>>([]),
                fc.stringMatching(/^[A-Za-z0-9_-]{8,64}$/).map((t): Array<[string, string]> => [['X-TabID', t]]),
                fc.constant<Array<[string, string]>>([['X-TabID', ctx.tabId]]),
                oddString.map((t): Array<[string, string]> => [['X-TabID', t.replace(/[\r\n]/g, '')]]),
              ),
              fc.oneof(
                { weight: 4, arbitrary: fc.constant<Array<[string, string]>>([]) },
                { weight: 1, arbitrary: fc.constantFrom('0', '1', '-1', '1.5', '1e300', 'NaN', '', ' 1', '0x10', '9007199254740993').map((v): Array<[string, string]> => [['X-Last-Event-ID', v]]) },
              ),
            )
            .map(([a, b]) => [...a, ...b])
        : fc.stringMatching(/^[A-Za-z0-9_-]{8,64}$/).map((t): Array<[string, string]> => [['X-TabID', t]]),
  },

  // QuickLogin.
  {
    name: 'POST /QuickLogin (QR request)',
    method: 'POST',
    path: pathVariants('/QuickLogin'),
    cookie: true,
    body: (ctx) => ({ mode: 'text', purpose: 'Fuzz', serviceId: '', tab: ctx.tabId }),
    fields: (ctx) => ({
      mode: fc.constantFrom('image', 'base64', 'text', 'svg', 'IMAGE', ''),
      purpose: fc.oneof(withOddChar('Log in'), oddString),
      serviceId: fc.oneof(fc.constant(ctx.serviceId ?? ''), fc.stringMatching(/^[A-Za-z0-9_-]{22}$/), oddString),
      tab: fc.oneof(fc.constant(ctx.tabId), fc.stringMatching(/^[A-Za-z0-9_-]{8,64}$/), withOddChar(ctx.tabId)),
      agentApiTimeout: fc.oneof(fc.constantFrom(1, 60, 3600, 1e9, 0.001, -1, 0), oddJsonValue),
      propertyFilter: fc.oneof(fc.constantFrom('FIRST, LAST', '*', ',,,', ' '), withOddChar('FIRST'), oddString),
      attachmentFilter: fc.oneof(fc.constantFrom('*', 'PNG'), oddString),
    }),
  },
  {
    name: 'POST /QuickLogin (backend registration)',
    method: 'POST',
    path: () => fc.constant('/QuickLogin'),
    body: (ctx) => ({ service: `https://${ctx.callbackHosts[0] ?? '127.0.0.1'}/callback`, sessionId: 'fuzz-session' }),
    fields: (ctx) => ({
      service: callbackUrl(ctx),
      sessionId: fc.oneof(withOddChar('fuzz-session'), oddString),
      serviceId: fc.oneof(fc.constant(ctx.serviceId ?? 'x'), fc.stringMatching(/^[A-Za-z0-9_-]{22}$/), oddString),
      webhookSecret: fc.oneof(fc.constant(`whsec_${'A'.repeat(32)}`), fc.constant(`whsec_${'A'.repeat(300)}`), withOddChar(`whsec_${'A'.repeat(32)}`), oddString),
    }),
  },
  { name: 'GET /QuickLogin/Qr/{code}.png', method: 'GET', path: codePath((c) => `/QuickLogin/Qr/${c}.png`) },
  {
    name: 'GET /QuickLogin/Sign/{code}',
    method: 'GET',
    path: codePath((c) => `/QuickLogin/Sign/${c}`),
    headers: () => fc.constantFrom<Array<[string, string]>>([], [['Accept', 'text/html']], [['Accept', 'application/json']], [['Accept', 'application/json, text/html']]),
  },
  {
    name: 'POST /QuickLogin/Sign/{code}',
    method: 'POST',
    path: codePath((c) => `/QuickLogin/Sign/${c}`),
    body: (ctx) => ({ legalId: ctx.identityId ?? 'x@legal', signature: 'A'.repeat(86) + '==', decision: 'approve' }),
    fields: (ctx) => ({
      legalId: fc.oneof(fc.constant(ctx.identityId ?? 'x'), withOddChar(ctx.identityId ?? 'x'), oddString),
      signature: fc.oneof(b64(88), fc.constant('A'.repeat(86) + '=='), withOddChar('AAAA'), oddString),
      decision: fc.oneof(fc.constantFrom('approve', 'reject', 'APPROVE', ''), oddString),
    }),
  },
  {
    name: 'POST /QuickLogin/Sign/{code}/Dev',
    method: 'POST',
    path: codePath((c) => `/QuickLogin/Sign/${c}/Dev`),
    body: () => ({ decision: 'reject' }),
    fields: () => ({ decision: fc.oneof(fc.constantFrom('approve', 'reject'), oddString) }),
  },
  {
    name: 'GET /QuickLogin/Attachment/{code}/{id}',
    method: 'GET',
    cookie: true,
    path: (ctx, damaged) =>
      fc
        .tuple(damaged ? pathSegment(fc.constant('x')) : codeSegment(ctx), damaged ? pathSegment(fc.constant('1')) : fc.constantFrom('0', 'a-b-c', '1'))
        .map(([c, id]) => `/QuickLogin/Attachment/${c}/${id}`),
  },

  // Agent API: accounts.
  {
    name: 'POST /Agent/Account/Create',
    method: 'POST',
    expensive: true,
    path: pathVariants('/Agent/Account/Create'),
    body: () => ({ userName: 'fuzzer', password: 'long enough password' }),
    fields: () => ({
      userName: fc.oneof(fc.stringMatching(/^[a-z0-9][a-z0-9._-]{1,20}$/), withOddChar('fuzzer'), oddString),
      password: fc.oneof(withOddChar('long enough password'), fc.constantFrom('\ud800'.repeat(8) + 'pw', '\u0000'.repeat(8)), oddString),
      eMail: fc.oneof(fc.constant('a@b'), withOddChar('a@b.example'), oddString),
    }),
  },
  {
    name: 'POST /Agent/Account/Login',
    method: 'POST',
    expensive: true,
    path: pathVariants('/Agent/Account/Login'),
    body: (ctx) => ({ userName: ctx.userName, password: 'wrong password', seconds: 60 }),
    fields: (ctx) => ({
      userName: fc.oneof(fc.constant(ctx.userName), withOddChar(ctx.userName), oddString),
      password: fc.oneof(withOddChar('wrong password'), oddString),
      seconds: fc.oneof(fc.constantFrom(0, -1, 1, 3600, 3601, 1e308, 0.5), oddJsonValue),
    }),
  },
  {
    name: 'POST /Agent/Account/Refresh',
    method: 'POST',
    auth: true,
    path: pathVariants('/Agent/Account/Refresh'),
    body: () => ({ seconds: 60 }),
    fields: () => ({ seconds: fc.oneof(fc.constantFrom(0, -1, 1, 3600, 3601, 1e308, 0.5, '60'), oddJsonValue) }),
  },
  { name: 'GET /Agent/Account/Info', method: 'GET', auth: true, path: pathVariants('/Agent/Account/Info') },

  // Agent API: identities.
  {
    name: 'POST /Agent/Legal/ApplyId',
    method: 'POST',
    auth: true,
    path: pathVariants('/Agent/Legal/ApplyId'),
    // The valid application is signed by its key, so the handler is reached; edits break the signature (403) or the schema (400).
    body: (ctx) => ({ ...(ctx.application ?? { properties: { FIRST: 'x' }, publicKey: 'A'.repeat(43) + '=', signature: 'A'.repeat(86) + '==' }) }),
    fields: () => ({
      properties,
      attachments,
      publicKey: fc.oneof(b64(43).map((s) => `${s}=`), withOddChar('A'.repeat(43) + '='), oddString),
      signature: fc.oneof(b64(86).map((s) => `${s}==`), oddString),
    }),
  },
  {
    name: 'GET /Agent/Legal/GetIdentity',
    method: 'GET',
    auth: true,
    path: () => fc.constant('/Agent/Legal/GetIdentity'),
    query: (ctx) =>
      fc.oneof(
        fc.constant(`?id=${percentEncode(ctx.identityId ?? 'x')}`),
        oddString.map((s) => `?id=${percentEncode(s)}`),
        fc.constantFrom('', '?', '?id=', '?id', '?id=a&id=b', '?id[]=1', '?id[a]=1', '?id=%zz', '?id=%ed%a0%80', `?id=${'i'.repeat(300)}`, '?__proto__=x'),
      ),
  },
  { name: 'GET /Agent/Legal/ListIdentities', method: 'GET', auth: true, path: pathVariants('/Agent/Legal/ListIdentities') },

  // Agent API: XMPP.
  {
    name: 'POST /Agent/Xmpp/RegisterEventHandler',
    method: 'POST',
    auth: true,
    cookie: true,
    path: pathVariants('/Agent/Xmpp/RegisterEventHandler'),
    body: (ctx) => ({ localName: 'x', namespace: 'urn:fuzz', function: 'OnFuzz', tabId: ctx.tabId }),
    fields: (ctx) => ({
      localName: fc.oneof(withOddChar('x'), oddString),
      namespace: fc.oneof(withOddChar('urn:fuzz'), oddString),
      type: fc.oneof(fc.constantFrom('chat', 'normal', 'headline', 'error', 'groupchat', ''), oddString),
      function: fc.oneof(fc.constantFrom('', 'OnFuzz', 'a.b.c', '__proto__', 'constructor'), withOddChar('OnFuzz'), oddString),
      tabId: fc.oneof(fc.constant(ctx.tabId), fc.stringMatching(/^[A-Za-z0-9_-]{8,64}$/), withOddChar(ctx.tabId)),
    }),
  },
  {
    name: 'POST /Agent/Xmpp/PopMessages',
    method: 'POST',
    auth: true,
    storedMessages: true,
    path: pathVariants('/Agent/Xmpp/PopMessages'),
    body: () => ({ maxCount: 10 }),
    fields: () => ({ maxCount: fc.oneof(fc.constantFrom(0, 1, 100, 101, -1, 1.5, 1e308), oddJsonValue) }),
  },
  {
    name: 'POST /Agent/Xmpp/SendTextMessage',
    method: 'POST',
    auth: true,
    path: pathVariants('/Agent/Xmpp/SendTextMessage'),
    body: (ctx) => ({ to: `nobody@${ctx.componentDomain}`, message: 'hello' }),
    fields: (ctx) => ({
      to: jid(ctx),
      message: fc.oneof(withOddChar('hello'), oddString, fc.string({ unit: oddChar, maxLength: 10 })),
      subject: fc.oneof(withOddChar('subject'), oddString),
      id: fc.oneof(withOddChar('msg-1'), oddString),
    }),
  },
  {
    name: 'POST /Agent/Xmpp/SendXmlMessage',
    method: 'POST',
    auth: true,
    path: pathVariants('/Agent/Xmpp/SendXmlMessage'),
    body: (ctx) => ({ to: `nobody@${ctx.componentDomain}`, xml: '<x xmlns="urn:fuzz">hi</x>' }),
    fields: (ctx) => ({ to: jid(ctx), xml: xmlPayloads }),
  },

  // The OpenID Provider and its login page (oidc-routes.ts).
  ...OIDC_ROUTES,
];

/** Paths a preflight or a WebSocket handshake may aim at: every route's, and some that are none. */
export const ROUTE_PATHS = [
  '/healthz', '/readyz', '/metrics', '/', '/wallet', '/wallet/', '/Events.js', '/openapi.json', '/docs/', '/.well-known/jwks.json', '/ClientEventsWS', '/ClientEvents', '/QuickLogin',
  '/QuickLogin/Qr/AAAA.png', '/QuickLogin/Sign/AAAA', '/QuickLogin/Sign/AAAA/Dev', '/QuickLogin/Attachment/AAAA/1', '/Agent/Account/Create',
  '/Agent/Account/Login', '/Agent/Account/Refresh', '/Agent/Account/Info', '/Agent/Legal/ApplyId', '/Agent/Legal/GetIdentity?id=x',
  '/Agent/Legal/ListIdentities', '/Agent/Xmpp/RegisterEventHandler', '/Agent/Xmpp/PopMessages', '/Agent/Xmpp/SendTextMessage',
  '/Agent/Xmpp/SendXmlMessage', '/nowhere', '/QuickLogin/Sign/%zz',
  '/oidc/.well-known/openid-configuration', '/oidc/auth', '/oidc/token', '/oidc/jwks', '/oidc/me', '/oidc/token/revocation', '/oidc/session/end',
  '/oidc/interaction/AAAA', '/oidc/interaction/AAAA/QuickLogin', '/oidc-login.js',
] as const;
