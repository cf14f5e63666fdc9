import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AgentClaims, TokenService } from '../agent/tokens.js';
import { TabwireError } from '../errors.js';
import type { AccountStore } from '../store/stores.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the bearer guard on /Agent routes that require a token. */
    agent?: AgentClaims;
  }
}

/**
 * The `Authorization: Bearer` guard shared by the Agent API (RFC 6750): missing, malformed,
 * expired, wrong-algorithm, unknown-kid and bad-signature tokens each get 401 with their own code;
 * a token of a deleted or disabled account too.
 */
export function bearerGuard(tokens: TokenService, accounts: AccountStore) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const header = request.headers.authorization;
    // RFC 6750 §3: tell the client which scheme is wanted and why it failed.
    reply.header('www-authenticate', 'Bearer realm="tabwire"');
    if (header === undefined || header === '') throw new TabwireError('token_missing');
    const match = /^Bearer ([A-Za-z0-9_-]+\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*)$/.exec(header);
    if (!match) throw new TabwireError('token_malformed', 'Expected "Authorization: Bearer <JWT>"');
    const claims = await tokens.verify(match[1]!);
    const account = await accounts.byId(claims.accountId);
    if (!account) throw new TabwireError('token_account_unknown');
    if (account.state !== 'active') throw new TabwireError('account_disabled');
    reply.removeHeader('www-authenticate');
    request.agent = claims;
  };
}
