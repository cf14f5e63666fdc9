import fc from 'fast-check';
import type { FuzzContext } from './context.js';
import { routeCase, type DamagedPart, type HttpCase } from './http-cases.js';
import { HTTP_ROUTES, ROUTE_PATHS } from './http-routes.js';
import type { FuzzCase } from './run-case.js';
import { headerSafe, oddString } from './strings.js';
import { wsCase, wsCases } from './websocket-cases.js';

/**
 * The fuzzer's generators, one module for the suite's property test and `npm run fuzz`
 * (docs/reliability.md): a case for one named route, for any route, or for any route or the
 * WebSocket with a given share.
 */
export { HTTP_ROUTES } from './http-routes.js';
export type { DamagedPart } from './http-cases.js';
export type { FuzzCase } from './run-case.js';

export const PREFLIGHT_ROUTE = 'OPTIONS preflight';

// What the service's CORS policy allows; a preflight asking for these is unambiguously valid.
const PREFLIGHT_METHODS = ['GET', 'POST'] as const;
const PREFLIGHT_HEADERS = ['content-type', 'x-tabid, authorization', 'X-Last-Event-ID'] as const;

/**
 * CORS preflights (Fetch standard §4.8) at any route, from allowed and other origins, asking for
 * any method and headers. A well-formed one (an origin, a method and header names the policy
 * allows) is answered 2xx for an allowed origin and 403 for any other; never 404 (the route
 * exists) or a bare 400. Others are held to the general rules only.
 */
export function preflightCase(ctx: FuzzContext): fc.Arbitrary<HttpCase> {
  const wellFormedOrigins = [...ctx.allowedOrigins, 'http://evil.example'];
  const origin = fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...wellFormedOrigins) }, fc.constantFrom('null', ''), oddString.map(headerSafe));
  const method = fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...PREFLIGHT_METHODS) }, fc.constantFrom('PUT', 'DELETE', 'get', '', 'GET, POST'), oddString.map(headerSafe));
  const requested = fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...PREFLIGHT_HEADERS) }, fc.constantFrom('', 'x-evil', 'content-type, x-evil'), oddString.map(headerSafe));
  return fc
    .record({
      path: fc.constantFrom(...ROUTE_PATHS.filter((p) => p !== '/nowhere' && !p.includes('%'))),
      origin: fc.option(origin, { nil: undefined, freq: 8 }),
      method: fc.option(method, { nil: undefined, freq: 8 }),
      requested: fc.option(requested, { nil: undefined }),
    })
    .map(({ path, origin, method, requested }) => {
      const wellFormed =
        origin !== undefined && wellFormedOrigins.includes(origin) &&
        method !== undefined && (PREFLIGHT_METHODS as readonly string[]).includes(method) &&
        (requested === undefined || (PREFLIGHT_HEADERS as readonly string[]).includes(requested));
      return {
        route: PREFLIGHT_ROUTE,
        ...(wellFormed ? { valid: { refusals: [403] } } : {}),
        request: {
          method: 'OPTIONS',
          target: path,
          headers: [
            ...(origin === undefined ? [] : [['Origin', origin] as [string, string]]),
            ...(method === undefined ? [] : [['Access-Control-Request-Method', method] as [string, string]]),
            ...(requested === undefined ? [] : [['Access-Control-Request-Headers', requested] as [string, string]]),
          ],
        },
      };
    });
}

/** GET routes that answer 2xx to anyone: what they answer must not depend on optional headers. */
export const PUBLIC_GET_PATHS = [
  '/healthz', '/readyz', '/metrics', '/', '/demo.js', '/sign.js', '/style.css', '/Events.js', '/favicon.png', '/favicon.ico',
  '/QuickLogin/DevIdentity',
  '/.well-known/jwks.json', '/.well-known/tabwire/result-keys', '/.well-known/tabwire/webhook-key',
] as const;

export const BENIGN_ROUTE = 'public GET, odd but well-formed headers';

/**
 * Optional headers a server may ignore (RFC 9110): an Upgrade it does not support (§7.8, e.g. h2c,
 * or websocket on a path that has none), Expect: 100-continue (§10.1.1), content negotiation,
 * conditionals, proxies' headers, credentials a public route does not need.
 */
function benignHeaders(ctx: FuzzContext): Array<Array<[string, string]>> {
  return [
    [['Upgrade', 'h2c'], ['Connection', 'Upgrade, HTTP2-Settings'], ['HTTP2-Settings', 'AAMAAABkAARAAAAAAAIAAAAA']],
    [['Upgrade', 'websocket'], ['Connection', 'Upgrade']],
    [['Upgrade', 'TLS/1.2'], ['Connection', 'Upgrade']],
    [['Expect', '100-continue']],
    [['Accept', 'text/html']], [['Accept', 'application/xml;q=0.9, */*;q=0.1']], [['Accept-Encoding', 'gzip, br, zstd, *']], [['Accept-Language', 'de-CH, *;q=0.5']],
    [['X-Forwarded-For', '203.0.113.9, 198.51.100.1']], [['X-Forwarded-Proto', 'https']], [['X-Forwarded-Host', 'example.org']], [['Forwarded', 'for=192.0.2.60;proto=https']],
    [['If-None-Match', '"x"']], [['If-Modified-Since', 'Wed, 21 Oct 2015 07:28:00 GMT']], [['Range', 'bytes=0-10']], [['Cache-Control', 'no-cache']], [['Pragma', 'no-cache']],
    [['Origin', 'http://evil.example']], [['Origin', ctx.allowedOrigins[0]!]], [['Cookie', 'a=b; tabwire_sid=x']], [['Cookie', ctx.cookie]],
    [['Authorization', 'Bearer x.y.z']], [['Authorization', 'Basic Zm9vOmJhcg==']], [['X-Api-Key', 'nope']], [['X-TabID', 'abc']],
    [['TE', 'trailers']], [['Via', '1.1 proxy']], [['DNT', '1']], [['Sec-Fetch-Mode', 'navigate'], ['Sec-Fetch-Site', 'cross-site']],
    [['Connection', 'keep-alive']], [['Max-Forwards', '0']], [['Content-Type', 'application/json']], [['User-Agent', 'curl/8.0']],
  ];
}

/** Valid GETs (and HEADs) of public routes with well-formed optional headers: each must be answered 2xx or 3xx. */
export function benignCase(ctx: FuzzContext): fc.Arbitrary<HttpCase> {
  return fc
    .record({
      method: fc.constantFrom('GET', 'HEAD'),
      path: fc.constantFrom(...PUBLIC_GET_PATHS),
      headers: fc.uniqueArray(fc.constantFrom(...benignHeaders(ctx)), { minLength: 1, maxLength: 3 }),
    })
    .map(({ method, path, headers }) => ({ route: BENIGN_ROUTE, valid: { refusals: [] }, request: { method, target: path, headers: headers.flat() } }));
}

/**
 * Cases for one route by its name (a name of HTTP_ROUTES, or PREFLIGHT_ROUTE), damaged in `part`
 * (a preflight is all headers; its `body` part has no cases).
 */
export function httpCaseFor(ctx: FuzzContext, name: string, part: DamagedPart = 'any'): fc.Arbitrary<FuzzCase> {
  if (name === PREFLIGHT_ROUTE) return preflightCase(ctx).map((c): FuzzCase => ({ kind: 'http', ...c }));
  if (name === BENIGN_ROUTE) return benignCase(ctx).map((c): FuzzCase => ({ kind: 'http', ...c }));
  const route = HTTP_ROUTES.find((r) => r.name === name);
  if (!route) throw new Error(`no route named ${name}`);
  return routeCase(ctx, route, part).map((c): FuzzCase => ({ kind: 'http', ...c }));
}

/** Whether a route has a body to damage (POST routes). */
export const hasBody = (name: string): boolean => HTTP_ROUTES.some((r) => r.name === name && r.body !== undefined);

/** Whether the route is an endpoint of the OpenID Provider library, whose errors are OAuth's (oauth-oracle.ts). */
export const isOAuth = (name: string): boolean => HTTP_ROUTES.some((r) => r.name === name && r.oauthRedirects !== undefined);

/** Whether a valid request of the route costs the service a password hash. */
export const isExpensive = (name: string): boolean => HTTP_ROUTES.some((r) => r.name === name && r.expensive === true);

/** Every route name the fuzzer drives over HTTP. */
export const HTTP_ROUTE_NAMES: readonly string[] = [...HTTP_ROUTES.map((r) => r.name), PREFLIGHT_ROUTE, BENIGN_ROUTE];

export interface AnyCaseOptions {
  /** Share of WebSocket cases, 0..1 (default 0.05). */
  wsShare?: number;
  /** Which part of HTTP requests is damaged (default: any). */
  part?: DamagedPart;
  /** Only routes whose name matches (default: all). */
  routes?: RegExp;
}

/** Any case: an HTTP request at any route (each route equally likely) or, with `wsShare`, a WebSocket case. */
export function anyCase(ctx: FuzzContext, o: AnyCaseOptions = {}): fc.Arbitrary<FuzzCase> {
  const wsShare = o.wsShare ?? 0.05;
  const names = HTTP_ROUTE_NAMES.filter((name) => (o.routes === undefined || o.routes.test(name)) && (o.part !== 'body' || hasBody(name)));
  const wsWeight = Math.round(wsShare * 1000);
  if (names.length === 0) return wsCase(ctx);
  const http = fc.oneof(...names.map((name) => httpCaseFor(ctx, name, o.part ?? 'any')));
  return wsWeight === 0 ? http : fc.oneof({ weight: 1000 - wsWeight, arbitrary: http }, { weight: wsWeight, arbitrary: wsCase(ctx) });
}

export { wsCase, wsCases };
