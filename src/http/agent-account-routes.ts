import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { isValidApiKey } from '../agent/api-keys.js';
import { USER_NAME_PATTERN, type Accounts } from '../agent/accounts.js';
import type { TokenService } from '../agent/tokens.js';
import { TabwireError } from '../errors.js';
import type { ApiKeyStore } from '../store/stores.js';
import { BEARER, JSON_BODY, json, JwkSet, problems } from './openapi-schemas.js';
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
const token = json(Type.Object({ jwt: Type.String(), expires: Type.Integer({ description: 'Unix seconds' }) }), 'A token');
const bearer = [{ bearer: [] }];

/** Agent API accounts and tokens (docs/agent-api.md). */
export async function agentAccountRoutes(fastify: FastifyInstance, o: AgentAccountRoutesOptions): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  app.post(
    '/Agent/Account/Create',
    {
      schema: {
        tags: ['Agent'],
        summary: 'Create an agent account (X-Api-Key unless openRegistration)',
        security: [{ apiKey: [] }, {}],
        body: Type.Object({
          userName: Type.String({ pattern: USER_NAME_PATTERN }),
          password,
          eMail: Type.Optional(humanText({ maxLength: 254, pattern: '^[^@\\s]+@[^@\\s]+$' })),
        }),
        response: {
          201: json(Type.Object({ userName: Type.String(), created: Type.Integer({ description: 'Unix seconds' }) }), 'Created'),
          ...problems(JSON_BODY, 'api_key_missing', 'api_key_invalid', 'account_exists'),
        },
      },
    },
    async (request, reply) => {
      if (!o.openRegistration) {
        const key = request.headers['x-api-key'];
        if (typeof key !== 'string' || key === '') throw new TabwireError('api_key_missing');
        if (!(await isValidApiKey(o.apiKeys, key))) throw new TabwireError('api_key_invalid');
      }
      const account = await o.accounts.create(request.body);
      return reply.code(201).send({ userName: account.userName, created: Math.floor(account.createdAt / 1000) });
    },
  );

  app.post(
    '/Agent/Account/Login',
    {
      schema: {
        tags: ['Agent'],
        summary: 'Log in: a token for the account',
        body: Type.Object({ userName: anyText({ minLength: 1, maxLength: 64 }), password: anyText({ minLength: 1, maxLength: 256 }), seconds }),
        response: { 200: token, ...problems(JSON_BODY, 'credentials_invalid', 'account_disabled', 'rate_limited') },
      },
    },
    async (request) => o.accounts.login(request.body, request.ip),
  );

  app.post(
    '/Agent/Account/Refresh',
    {
      preHandler: o.guard,
      schema: {
        tags: ['Agent'],
        summary: 'A new token for the bearer\'s account',
        security: bearer,
        body: Type.Object({ seconds }),
        response: { 200: token, ...problems(JSON_BODY, BEARER) },
      },
    },
    async (request) => o.accounts.refresh(request.agent!, request.body.seconds),
  );

  const info = Type.Object({ userName: Type.String(), expires: Type.Integer({ description: 'The token\'s expiry, Unix seconds' }) });
  const infoSchema = { tags: ['Agent'], summary: 'The bearer\'s account', security: bearer, response: { 200: json(info, 'The account'), ...problems(BEARER) } };
  app.get('/Agent/Account/Info', { preHandler: o.guard, schema: infoSchema }, async (request) => ({
    userName: request.agent!.userName,
    expires: request.agent!.expires,
  }));

  const jwksSchema = { tags: ['Keys'], summary: 'The keys that verify Agent API tokens (JWK Set, RFC 7517)', response: { 200: json(JwkSet, 'The key set'), ...problems() } };
  app.get('/.well-known/jwks.json', { schema: jwksSchema }, async (_request, reply) => reply.header('cache-control', 'public, max-age=60').send(await o.tokens.jwks()));
}
