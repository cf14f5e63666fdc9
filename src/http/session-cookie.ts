import type { FastifyReply, FastifyRequest } from 'fastify';
import { hashSession, newSessionId, SESSION_COOKIE, sessionCookieOptions, sessionIdOf, type CookiePolicy } from './session.js';

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
