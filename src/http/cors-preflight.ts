import type { FastifyReply, FastifyRequest } from 'fastify';
import { TabwireError } from '../errors.js';

/**
 * Refuses CORS preflights that @fastify/cors would answer outside the catalogue (a 404 for a foreign
 * Origin, a text/plain 400 for an incomplete preflight). Runs before it as an onRequest hook; allowed
 * preflights go on to @fastify/cors, and CORS stays granted to the configured origins only.
 * An OPTIONS request without Origin is no CORS request and is routed as usual.
 */
export function preflightGuard(allowedOrigins: readonly string[]) {
  // A callback hook, not an async one: it runs on every request, and a promise per request costs microtask
  // turns before routing for nothing (the refusals are the same either way).
  return (request: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void): void => {
    done(preflightRefusal(request, allowedOrigins));
  };
}

function preflightRefusal(request: FastifyRequest, allowedOrigins: readonly string[]): TabwireError | undefined {
  if (request.method !== 'OPTIONS') return undefined;
  const origin = request.headers.origin;
  if (origin === undefined) return undefined;
  if (typeof origin !== 'string' || !allowedOrigins.includes(origin)) {
    return new TabwireError('cors_origin_not_allowed', `Origin ${String(origin)} is not among the allowed origins`);
  }
  // Fetch standard §4.8 (CORS-preflight fetch): a preflight always names the method it asks for.
  const method = request.headers['access-control-request-method'];
  if (typeof method !== 'string' || method.trim() === '') {
    return new TabwireError('preflight_invalid', 'A CORS preflight must carry Access-Control-Request-Method');
  }
  return undefined;
}
