import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { ATTACHMENT_TYPES, MAX_ATTACHMENT_BYTES, MAX_ATTACHMENTS, MAX_PROPERTIES } from '../identity/application.js';
import { applyForIdentity, type ApplyOptions } from '../identity/apply.js';
import { identityView } from '../identity/view.js';
import type { IdentityQuota } from '../identity/quota.js';
import { TabwireError } from '../errors.js';
import type { IdentityCursor } from '../store/stores.js';
import { PROPERTY_NAME } from '../identity/create.js';
import { BEARER, JSON_BODY, json, problems } from './openapi-schemas.js';
import { anyText, humanText } from './schema-text.js';

export interface AgentLegalRoutesOptions {
  apply: ApplyOptions;
  guard: (request: any, reply: any) => Promise<void>;
  /** Identities per account (ApplyId beyond it: 507). */
  quota: IdentityQuota;
  /** Largest and default page of ListIdentities. */
  pageSize: number;
}

/** ListIdentities cursors are opaque to clients: base64url of `[created, id]` of the last identity of a page. */
const encodeCursor = (c: IdentityCursor): string => Buffer.from(JSON.stringify([c.created, c.id])).toString('base64url');

function decodeCursor(text: string): IdentityCursor {
  try {
    const value: unknown = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
    if (Array.isArray(value) && value.length === 2 && Number.isSafeInteger(value[0]) && typeof value[1] === 'string') {
      return { created: value[0] as number, id: value[1] };
    }
  } catch {
    // falls through to the refusal
  }
  throw new TabwireError('validation_failed', 'querystring/after is not a cursor this service gave out', {
    errors: [{ pointer: '/after', detail: 'is not a cursor this service gave out' }],
  });
}

const ListQuery = Type.Object({
  // Query strings are not coerced (see app.ts), so numbers arrive as digits.
  limit: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,5}$' })),
  after: Type.Optional(Type.String({ minLength: 1, maxLength: 1024, pattern: '^[A-Za-z0-9_-]+$' })),
});

// base64 of MAX_ATTACHMENT_BYTES, rounded up.
const MAX_BASE64 = Math.ceil(MAX_ATTACHMENT_BYTES / 3) * 4;

const ApplySchema = Type.Object({
  // TypeBox drops a Record key's own constraints (it becomes patternProperties), so names are checked by propertyNames.
  properties: Type.Record(Type.String(), humanText({ maxLength: 1024 }), {
    maxProperties: MAX_PROPERTIES,
    minProperties: 1,
    propertyNames: { type: 'string', pattern: PROPERTY_NAME.source },
  }),
  attachments: Type.Optional(
    Type.Array(
      Type.Object({
        fileName: humanText({ minLength: 1, maxLength: 255, pattern: '^[^/\\\\]+$' }),
        contentType: Type.Union(ATTACHMENT_TYPES.map((t) => Type.Literal(t))),
        content: Type.String({ minLength: 1, maxLength: MAX_BASE64, pattern: '^[A-Za-z0-9+/]+={0,2}$' }),
      }),
      { maxItems: MAX_ATTACHMENTS },
    ),
  ),
  publicKey: Type.String({ pattern: '^[A-Za-z0-9+/]{43}=$' }),
  signature: Type.String({ pattern: '^[A-Za-z0-9+/]{86}==$' }),
});

/** An identity as the Agent API shows it (identity/view.ts; times in Unix seconds). */
const IdentityView = Type.Object({
  Id: Type.String(),
  Provider: Type.String(),
  State: Type.String({ description: 'Created, Approved, Rejected, Obsoleted or Compromised' }),
  Created: Type.Integer(),
  Updated: Type.Integer(),
  From: Type.Integer(),
  To: Type.Integer(),
  Properties: Type.Record(Type.String(), Type.String()),
  Attachments: Type.Array(
    Type.Object({ Id: Type.String(), ContentType: Type.String(), FileName: Type.String(), Signature: Type.String(), Timestamp: Type.Integer() }),
  ),
  ClientKeyName: Type.String(),
  ClientPubKey: Type.String(),
});
const bearer = [{ bearer: [] }];

/** Identities through the Agent API (docs/signing.md): apply with proof of key possession, read one's own. */
export async function agentLegalRoutes(fastify: FastifyInstance, o: AgentLegalRoutesOptions): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  app.post(
    '/Agent/Legal/ApplyId',
    // Attachments make this the one large body; everything else keeps the small global limit.
    {
      preHandler: o.guard,
      bodyLimit: MAX_ATTACHMENTS * MAX_BASE64 + 64 * 1024,
      schema: {
        tags: ['Agent'],
        summary: 'Apply for an identity, signed with its key (docs/signing.md "Identities")',
        security: bearer,
        body: ApplySchema,
        response: {
          201: json(Type.Object({ identity: IdentityView }), 'The identity, in state Created'),
          ...problems(JSON_BODY, BEARER, 'public_key_refused', 'signature_invalid', 'identity_limit_reached'),
        },
      },
    },
    async (request, reply) => {
      const { signature, ...application } = request.body;
      const account = { id: request.agent!.accountId, userName: request.agent!.userName };
      const identity = await o.quota.within(account.id, () => applyForIdentity(o.apply, account, application, signature));
      return reply.code(201).send({ identity: identityView(identity) });
    },
  );

  app.get(
    '/Agent/Legal/GetIdentity',
    {
      preHandler: o.guard,
      schema: {
        tags: ['Agent'],
        summary: 'One of the account\'s identities',
        security: bearer,
        querystring: Type.Object({ id: anyText({ minLength: 1, maxLength: 255 }) }),
        response: { 200: json(Type.Object({ identity: IdentityView }), 'The identity'), ...problems('validation_failed', BEARER, 'identity_not_found') },
      },
    },
    async (request) => {
      const { id } = request.query;
      const identity = await o.apply.store.identities.get(id);
      // Another account's identity is reported exactly like a missing one.
      if (!identity || identity.accountId !== request.agent!.accountId) throw new TabwireError('identity_not_found');
      return { identity: identityView(identity) };
    },
  );

  /**
   * One page of the account's identities, oldest first (docs/agent-api.md "Identities"): `limit`
   * (default and at most identityPageSize), `after` = the `next` of the previous page. Without
   * either, the first page: older clients that expect every identity get the first pageSize.
   */
  const listSchema = {
    tags: ['Agent'],
    summary: 'A page of the account\'s identities, oldest first',
    security: bearer,
    querystring: ListQuery,
    response: {
      200: json(Type.Object({ identities: Type.Array(IdentityView), next: Type.Optional(Type.String({ description: 'The `after` of the next page' })) }), 'A page'),
      ...problems('validation_failed', BEARER),
    },
  };
  app.get('/Agent/Legal/ListIdentities', { preHandler: o.guard, schema: listSchema }, async (request) => {
    const { query } = request;
    const limit = Math.min(query.limit === undefined ? o.pageSize : Number(query.limit), o.pageSize);
    const after = query.after === undefined ? undefined : decodeCursor(query.after);
    // One more than asked tells whether another page follows, without a count.
    const rows = await o.apply.store.identities.page(request.agent!.accountId, limit + 1, after);
    const page = rows.slice(0, limit);
    const last = page.at(-1);
    return {
      identities: page.map(identityView),
      ...(rows.length > limit && last ? { next: encodeCursor({ created: last.created, id: last.id }) } : {}),
    };
  });
}
