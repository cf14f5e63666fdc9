import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { ATTACHMENT_TYPES, MAX_ATTACHMENT_BYTES, MAX_ATTACHMENTS, MAX_PROPERTIES, type IdentityApplication } from '../identity/application.js';
import { applyForIdentity, type ApplyOptions } from '../identity/apply.js';
import { identityView } from '../identity/view.js';
import { TabwireError } from '../errors.js';
import { PROPERTY_NAME } from '../identity/create.js';
import { anyText, humanText } from './schema-text.js';

export interface AgentLegalRoutesOptions {
  apply: ApplyOptions;
  guard: (request: any, reply: any) => Promise<void>;
}

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

/** Identities through the Agent API (ARCHITECTURE.md §2): apply with proof of key possession, read one's own. */
export async function agentLegalRoutes(app: FastifyInstance, o: AgentLegalRoutesOptions): Promise<void> {
  app.post(
    '/Agent/Legal/ApplyId',
    // Attachments make this the one large body; everything else keeps the small global limit.
    { preHandler: o.guard, bodyLimit: MAX_ATTACHMENTS * MAX_BASE64 + 64 * 1024, schema: { body: ApplySchema } },
    async (request, reply) => {
      const { signature, ...application } = request.body as IdentityApplication & { signature: string };
      const identity = await applyForIdentity(o.apply, { id: request.agent!.accountId, userName: request.agent!.userName }, application, signature);
      return reply.code(201).send({ identity: identityView(identity) });
    },
  );

  app.get(
    '/Agent/Legal/GetIdentity',
    { preHandler: o.guard, schema: { querystring: Type.Object({ id: anyText({ minLength: 1, maxLength: 255 }) }) } },
    async (request) => {
      const { id } = request.query as { id: string };
      const identity = await o.apply.store.identities.get(id);
      // Another account's identity is reported exactly like a missing one.
      if (!identity || identity.accountId !== request.agent!.accountId) throw new TabwireError('identity_not_found');
      return { identity: identityView(identity) };
    },
  );

  app.get('/Agent/Legal/ListIdentities', { preHandler: o.guard }, async (request) => ({
    identities: (await o.apply.store.identities.list(request.agent!.accountId)).map(identityView),
  }));
}
