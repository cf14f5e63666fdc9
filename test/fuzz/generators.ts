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

/** CORS preflights (Fetch standard §4.8) at any route, from allowed and other origins, asking for any method and headers. */
export function preflightCase(ctx: FuzzContext): fc.Arbitrary<HttpCase> {
  const origin = fc.oneof(fc.constantFrom(...ctx.allowedOrigins), fc.constantFrom('http://evil.example', 'null', ''), oddString.map(headerSafe));
  const method = fc.oneof(fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'get', '', 'GET, POST'), oddString.map(headerSafe));
  const requested = fc.oneof(fc.constantFrom('content-type', 'x-tabid, authorization', 'x-evil', 'content-type, x-evil', ''), oddString.map(headerSafe));
  return fc
    .record({
      path: fc.constantFrom(...ROUTE_PATHS),
      origin: fc.option(origin, { nil: undefined }),
      method: fc.option(method, { nil: undefined }),
      requested: fc.option(requested, { nil: undefined }),
    })
    .map(({ path, origin, method, requested }) => ({
      route: PREFLIGHT_ROUTE,
      request: {
        method: 'OPTIONS',
        target: path,
        headers: [
          ...(origin === undefined ? [] : [['Origin', origin] as [string, string]]),
          ...(method === undefined ? [] : [['Access-Control-Request-Method', method] as [string, string]]),
          ...(requested === undefined ? [] : [['Access-Control-Request-Headers', requested] as [string, string]]),
        ],
      },
    }));
}

/**
 * Cases for one route by its name (a name of HTTP_ROUTES, or PREFLIGHT_ROUTE), damaged in `part`
 * (a preflight is all headers; its `body` part has no cases).
 */
export function httpCaseFor(ctx: FuzzContext, name: string, part: DamagedPart = 'any'): fc.Arbitrary<FuzzCase> {
  if (name === PREFLIGHT_ROUTE) return preflightCase(ctx).map((c): FuzzCase => ({ kind: 'http', ...c }));
  const route = HTTP_ROUTES.find((r) => r.name === name);
  if (!route) throw new Error(`no route named ${name}`);
  return routeCase(ctx, route, part).map((c): FuzzCase => ({ kind: 'http', ...c }));
}

/** Whether a route has a body to damage (POST routes). */
export const hasBody = (name: string): boolean => HTTP_ROUTES.some((r) => r.name === name && r.body !== undefined);

/** Whether a valid request of the route costs the service a password hash. */
export const isExpensive = (name: string): boolean => HTTP_ROUTES.some((r) => r.name === name && r.expensive === true);

/** Every route name the fuzzer drives over HTTP. */
export const HTTP_ROUTE_NAMES: readonly string[] = [...HTTP_ROUTES.map((r) => r.name), PREFLIGHT_ROUTE];

/** Any case: an HTTP request at any route (each route equally likely) or, with `wsShare`, a WebSocket case. */
export function anyCase(ctx: FuzzContext, o: { wsShare?: number } = {}): fc.Arbitrary<FuzzCase> {
  const wsShare = o.wsShare ?? 0.05;
  const http = fc.oneof(...HTTP_ROUTE_NAMES.map((name) => httpCaseFor(ctx, name)));
  const wsWeight = Math.round(wsShare * 1000);
  return fc.oneof({ weight: 1000 - wsWeight, arbitrary: http }, { weight: wsWeight, arbitrary: wsCase(ctx) });
}

export { wsCase, wsCases };
