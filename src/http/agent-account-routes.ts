import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { isValidApiKey } from '../agent/api-keys.js';
import { USER_NAME_PATTERN, type Accounts } from '../agent/accounts.js';
import type { TokenService } from '../agent/tokens.js';
import { TabwireError } from '../errors.js';
import type { ApiKeyStore } from '../store/stores.js';
import { anyText, humanText } from './schema-text.js';

export interface AgentAccountRoutesOptions {
  accounts: Accounts;
  tokens: TokenService;
  apiKeys: ApiKeyStore;
  openRegistration: boolean;
  guard: (request: any, reply: any) => Promise<void>;
}

// Lifetimes outside 1..3600 are clamped (docs/agent-api.md); the type is checked, not coerced.
const seconds = Type.Number({ description: 'token lifetime in seconds, clamped to 1..3600' });
// Any characters but unpaired surrogates, which UTF-8 cannot carry: two such passwords would hash alike (docs/input.md).
const password = anyText({ minLength: 8, maxLength: 256 });
const tokenAnswer = { 200: Type.Object({ jwt: Type.String(), expires: Type.Integer() }) };

/** Agent API accounts and tokens (docs/agent-api.md). */
export async function agentAccountRoutes(app: FastifyInstance, o: AgentAccountRoutesOptions): Promise<void> {
  app.post(
    '/Agent/Account/Create',
    {
      schema: {
        body: Type.Object({
          userName: Type.String({ pattern: USER_NAME_PATTERN }),
          password,
          eMail: Type.Optional(humanText({ maxLength: 254, pattern: '^[^@\\s]+@[^@\\s]+$' })),
        }),
      },
    },
    async (request, reply) => {
      if (!o.openRegistration) {
        const key = request.headers['x-api-key'];
        if (typeof key !== 'string' || key === '') throw new TabwireError('api_key_missing');
        if (!(await isValidApiKey(o.apiKeys, key))) throw new TabwireError('api_key_invalid');
      }
      const account = await o.accounts.create(request.body as { userName: string; password: string; eMail?: string });
      return reply.code(201).send({ userName: account.userName, created: Math.floor(account.createdAt / 1000) });
    },
  );

  app.post(
    '/Agent/Account/Login',
    {
      schema: {
        body: Type.Object({ userName: anyText({ minLength: 1, maxLength: 64 }), password: anyText({ minLength: 1, maxLength: 256 }), seconds }),
        response: tokenAnswer,
      },
    },
    async (request) => o.accounts.login(request.body as { userName: string; password: string; seconds: number }, request.ip),
  );

  app.post(
    '/Agent/Account/Refresh',
    { preHandler: o.guard, schema: { body: Type.Object({ seconds }), response: tokenAnswer } },
    async (request) => o.accounts.refresh(request.agent!, (request.body as { seconds: number }).seconds),
  );

  app.get('/Agent/Account/Info', { preHandler: o.guard }, async (request) => ({
    userName: request.agent!.userName,
    expires: request.agent!.expires,
  }));

  app.get('/.well-known/jwks.json', async (_request, reply) => reply.header('cache-control', 'public, max-age=60').send(await o.tokens.jwks()));
}
