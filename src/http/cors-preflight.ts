import type { FastifyRequest } from 'fastify';
import { TabwireError } from '../errors.js';

/**
 * Refuses CORS preflights that @fastify/cors would answer outside the catalogue (a 404 for a foreign
 * Origin, a text/plain 400 for an incomplete preflight). Runs before it as an onRequest hook; allowed
 * preflights go on to @fastify/cors, and CORS stays granted to the configured origins only.
 * An OPTIONS request without Origin is no CORS request and is routed as usual.
 */
export function preflightGuard(allowedOrigins: readonly string[]) {
  return async (request: FastifyRequest): Promise<void> => {
    if (request.method !== 'OPTIONS') return;
    const origin = request.headers.origin;
    if (origin === undefined) return;
    if (typeof origin !== 'string' || !allowedOrigins.includes(origin)) {
      throw new TabwireError('cors_origin_not_allowed', `Origin ${String(origin)} is not among the allowed origins`);
    }
    // Fetch standard §4.8 (CORS-preflight fetch): a preflight always names the method it asks for.
    const method = request.headers['access-control-request-method'];
    if (typeof method !== 'string' || method.trim() === '') {
      throw new TabwireError('preflight_invalid', 'A CORS preflight must carry Access-Control-Request-Method');
    }
  };
}
