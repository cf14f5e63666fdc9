import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { HandlerRegistry } from '../handlers/handlers.js';
import { RegisterEventHandler } from '../agent/register-handler.js';
import type { Messaging } from '../agent/messaging.js';
import { TabwireError } from '../errors.js';
import { TAB_ID_PATTERN } from '../protocol/frames.js';
import type { TabRegistry } from '../hub/registry.js';
import { BEARER, JSON_BODY, json, problems } from './openapi-schemas.js';
import { anyText, humanText, multilineText, xmlText } from './schema-text.js';
import { hashSession, sessionIdOf } from './session.js';

export interface AgentXmppRoutesOptions {
  handlers: HandlerRegistry;
  messaging: Messaging;
  /** Whose a tab is and whether it is live, for RegisterEventHandler (agent/register-handler.ts). */
  registry: TabRegistry;
  /** Parses and re-serializes an XML payload (xmpp/xml-payload.ts); never concatenated into a stanza. */
  parseXml: (text: string) => { ok: true; xml: string } | { ok: false; error: string };
  guard: (request: any, reply: any) => Promise<void>;
}

// RFC 7622 §3.2-3.4: no part of a JID may hold control characters (PRECIS IdentifierClass / OpaqueString).
const JID = humanText({ minLength: 3, maxLength: 3071, pattern: '^[^@/\\s]+@[^@/\\s]+(/.*)?$' });
const optionalName = Type.Optional(humanText({ maxLength: 256 }));
const bearer = [{ bearer: [] }];
const sent = json(Type.Object({ sent: Type.Literal(true), id: Type.String({ description: 'The message id' }) }), 'Sent, or stored for a local recipient');
const SEND_REFUSALS = ['recipient_unknown', 'mailbox_full', 'xmpp_unavailable'] as const;
const PoppedMessage = Type.Object({
  id: Type.String(),
  from: Type.String(),
  to: Type.String(),
  type: Type.String(),
  timestamp: Type.Integer({ description: 'Unix seconds' }),
  content: Type.String({ description: 'The whole stanza as XML' }),
});

/** The Agent API's XMPP group (docs/xmpp.md, docs/agent-api.md). */
export async function agentXmppRoutes(fastify: FastifyInstance, o: AgentXmppRoutesOptions): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const registerHandler = new RegisterEventHandler({ handlers: o.handlers, tabs: o.registry });
  app.post(
    '/Agent/Xmpp/RegisterEventHandler',
    {
      preHandler: o.guard,
      schema: {
        tags: ['Agent'],
        summary: 'Route matching XMPP messages to a live tab of the caller\'s session as events (docs/xmpp.md)',
        security: bearer,
        body: Type.Object({
          localName: optionalName,
          namespace: optionalName,
          type: Type.Optional(humanText({ maxLength: 16 })),
          // The event type the page subscribes to with Events.on; "" removes this selector.
          function: Type.Optional(Type.String({ maxLength: 64, pattern: '^([A-Za-z][A-Za-z0-9_.]*)?$' })),
          tabId: Type.String({ pattern: TAB_ID_PATTERN.source }),
        }),
        response: {
          200: json(Type.Object({}), 'Registered (or removed, for function "")'),
          ...problems(JSON_BODY, BEARER, 'tab_session_mismatch', 'tab_not_registered', 'tab_owned_by_other_account', 'handler_limit_reached'),
        },
      },
    },
    async (request) => {
      const { body } = request;
      // The tab's owner proves itself with the session cookie (the use case says why).
      const sessionId = sessionIdOf(request);
      await registerHandler.run({
        accountId: request.agent!.accountId,
        tabId: body.tabId,
        session: sessionId === undefined ? undefined : hashSession(sessionId),
        selector: { localName: body.localName, namespace: body.namespace, type: body.type },
        fn: body.function,
      });
      return {};
    },
  );

  app.post(
    '/Agent/Xmpp/PopMessages',
    {
      preHandler: o.guard,
      schema: {
        tags: ['Agent'],
        summary: 'Take up to maxCount stored messages of the account, oldest first',
        security: bearer,
        body: Type.Object({ maxCount: Type.Integer({ minimum: 1, maximum: 100 }) }),
        response: { 200: json(Type.Object({ messages: Type.Array(PoppedMessage) }), 'The messages, removed from the store'), ...problems(JSON_BODY, BEARER) },
      },
    },
    async (request) => ({ messages: await o.messaging.pop(request.agent!.accountId, request.body.maxCount) }),
  );

  app.post(
    '/Agent/Xmpp/SendTextMessage',
    {
      preHandler: o.guard,
      schema: {
        tags: ['Agent'],
        summary: 'Send a chat message',
        security: bearer,
        body: Type.Object({
          to: JID,
          // The body is the one field that may span lines (tab, LF, CR); all become stanza content (docs/input.md).
          message: multilineText({ maxLength: 65_536 }),
          subject: Type.Optional(humanText({ maxLength: 1024 })),
          id: Type.Optional(xmlText({ minLength: 1, maxLength: 128 })),
        }),
        response: { 200: sent, ...problems(JSON_BODY, BEARER, SEND_REFUSALS) },
      },
    },
    async (request) => {
      const { body } = request;
      const children = [
        ...(body.subject === undefined ? [] : [{ kind: 'text' as const, name: 'subject' as const, text: body.subject }]),
        { kind: 'text' as const, name: 'body' as const, text: body.message },
      ];
      return o.messaging.send(request.agent!.userName, body.to, children, body.id);
    },
  );

  app.post(
    '/Agent/Xmpp/SendXmlMessage',
    {
      preHandler: o.guard,
      schema: {
        tags: ['Agent'],
        summary: 'Send a message with an XML payload (parsed and re-serialized, never concatenated)',
        security: bearer,
        body: Type.Object({ to: JID, xml: anyText({ minLength: 1, maxLength: 65_536 }) }),
        response: { 200: sent, ...problems(JSON_BODY, BEARER, 'xml_invalid', SEND_REFUSALS) },
      },
    },
    async (request) => {
      const { body } = request;
      const parsed = o.parseXml(body.xml);
      if (!parsed.ok) throw new TabwireError('xml_invalid', parsed.error);
      return o.messaging.send(request.agent!.userName, body.to, [{ kind: 'xml', xml: parsed.xml }]);
    },
  );
}
