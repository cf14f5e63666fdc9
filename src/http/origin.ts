import type { FastifyRequest } from 'fastify';
import { TabwireError } from '../errors.js';

/**
 * Browsers always send Origin on WebSocket handshakes and cross-origin POSTs; a present Origin
 * must be on the allowlist (never relaxed globally, docs/agent-api.md). A request without
 * one comes from a non-browser client, which could forge any header anyway.
 */
export function checkOrigin(request: FastifyRequest, allowed: readonly string[]): string | null {
  return checkOriginHeader(request.headers.origin, allowed);
}

/** The same check on a raw header value (WebSocket handshakes have no Fastify request). */
export function checkOriginHeader(origin: string | string[] | undefined, allowed: readonly string[]): string | null {
  if (origin === undefined) return null;
  if (typeof origin !== 'string' || !allowed.includes(origin)) {
    throw new TabwireError('origin_not_allowed', `Origin ${String(origin)} is not among the allowed origins`);
  }
  return origin;
}
