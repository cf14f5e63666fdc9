import { hash, randomBytes } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';

/** Name of the session cookie a tab is bound to at its first Register (docs/events.md). */
export const SESSION_COOKIE = 'tabwire_sid';
const SESSION_PATTERN = /^[A-Za-z0-9_-]{43}$/;

export const newSessionId = (): string => randomBytes(32).toString('base64url');

/**
 * Stores keep only a hash, so a leaked database does not hand out sessions. SHA-256, base64url. Every QR
 * refresh hashes its cookie: the one-shot `hash` costs about two thirds of a Hash object's create, update
 * and digest, for the same bytes.
 */
export const hashSession = (sessionId: string): string => hash('sha256', sessionId, 'base64url');

/** A cookie value if it is a well-formed session id. */
export const validSessionId = (value: string | undefined): string | undefined =>
  value !== undefined && SESSION_PATTERN.test(value) ? value : undefined;

/** The caller's session id from its cookie, when present and well-formed. */
export function sessionIdOf(request: FastifyRequest): string | undefined {
  return validSessionId(request.cookies[SESSION_COOKIE]);
}

export interface CookiePolicy {
  secure: boolean;
  sameSite: 'lax' | 'strict' | 'none';
}

/**
 * Cookie options: HttpOnly always; Secure when the public base is https (or SameSite=None). A
 * cross-site cookie (SameSite=None) is also Partitioned (CHIPS): browsers that block third-party
 * cookies still keep it, keyed to the embedding page's site, which is exactly the scope a tab needs.
 */
export const sessionCookieOptions = (policy: CookiePolicy) =>
  ({
    path: '/',
    httpOnly: true,
    secure: policy.secure || policy.sameSite === 'none',
    sameSite: policy.sameSite,
    partitioned: policy.sameSite === 'none',
  }) as const;

/**
 * The caller's session hash, creating a session (and setting its cookie on `reply`) when the
 * request carries none. Used by transports that bind tabs over plain HTTP (long-poll).
 */
export function ensureSession(request: FastifyRequest, reply: FastifyReply, policy: CookiePolicy): string {
  let sessionId = sessionIdOf(request);
  if (sessionId === undefined) {
    sessionId = newSessionId();
    reply.setCookie(SESSION_COOKIE, sessionId, sessionCookieOptions(policy));
  }
  return hashSession(sessionId);
}

/**
 * Sets the session cookie on `reply` when the request carries none (pages and scripts of the
 * service): returns whether it did, so a response that sets it is never stored by a shared cache.
 */
export function handOutSession(request: FastifyRequest, reply: FastifyReply, policy: CookiePolicy): boolean {
  if (sessionIdOf(request) !== undefined) return false;
  reply.setCookie(SESSION_COOKIE, newSessionId(), sessionCookieOptions(policy));
  return true;
}
