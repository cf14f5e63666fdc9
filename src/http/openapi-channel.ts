import { Type, type TSchema } from '@sinclair/typebox';
import { closeCodes } from '../protocol/close-codes.js';
import { EventTypes } from '../protocol/events.js';
import { EVENTS_SUBPROTOCOL, TAB_ID_PATTERN } from '../protocol/frames.js';

/**
 * The client event channel as the OpenAPI document describes it (docs/openapi.md). OpenAPI 3.1 has no
 * words for WebSocket frames, so the frames and events are component schemas (`EventFrame`,
 * `RegisterFrame`, `QuickLoginResult`, ...), the `x-tabwire-channel` extension of the document ties them
 * to the two transports, and `info.description` says it in prose. The wire shapes are those of
 * protocol/frames.ts and protocol/events.ts (docs/events.md).
 */

const tabId = Type.String({ pattern: TAB_ID_PATTERN.source, description: 'Chosen by the page (the reference client uses a GUID)' });

const RegisterFrame = Type.Object(
  {
    cmd: Type.Literal('Register'),
    tabId,
    location: Type.String({ maxLength: 4096, description: 'The page location' }),
    lastEventId: Type.Optional(Type.Integer({ minimum: 0, description: 'Additive: the last event id the client saw' })),
  },
  { description: 'Client → service: binds the tab to the session (docs/events.md)' },
);
const PingFrame = Type.Object({ cmd: Type.Literal('Ping') }, { description: 'Client → service, every 10 s' });
const UnregisterFrame = Type.Object({ cmd: Type.Literal('Unregister') }, { description: 'Client → service: lets the tab go at once' });

const EventFrame = Type.Object(
  {
    type: Type.String({ description: `One of ${Object.keys(EventTypes).join(', ')}, or the \`function\` of an Agent API event handler` }),
    data: Type.Optional(Type.Unknown({ description: 'Per type: see x-tabwire-channel.events' })),
    id: Type.Optional(Type.Integer({ minimum: 1, description: 'Increases per tab; absent on CheckServerInstance, EventsLost and NOP' })),
  },
  { description: 'Service → client: one event (a WebSocket text frame, or an element of a long-poll answer)' },
);

const ResultAttachment = Type.Object({
  Id: Type.String(),
  ContentType: Type.String(),
  FileName: Type.String(),
  Signature: Type.String(),
  Timestamp: Type.Integer(),
  Url: Type.String({ description: 'Fetchable by the page (session) that asked, while the result is fresh' }),
});

const QuickLoginResult = Type.Object(
  {
    Id: Type.String(),
    Key: Type.String(),
    Provider: Type.String(),
    State: Type.String(),
    Created: Type.Integer(),
    Updated: Type.Integer(),
    From: Type.Integer(),
    To: Type.Integer(),
    Properties: Type.Record(Type.String(), Type.String()),
    Attachments: Type.Array(ResultAttachment),
    ClientKeyName: Type.String(),
    HasClientPublicKey: Type.Boolean(),
    ClientPubKey: Type.String(),
    HasClientSignature: Type.Boolean(),
    ClientSignature: Type.String(),
    ServerSignature: Type.String({ description: 'Ed25519 over the RFC 8785 canonical result; keys at /.well-known/tabwire/result-keys' }),
    Purpose: Type.String(),
    AgentApiToken: Type.Optional(Type.String()),
    AgentApiExpires: Type.Optional(Type.Integer()),
  },
  { description: 'SignatureReceived.data (docs/signing.md "The result")' },
);

const QuickLoginRejection = Type.Object({ Id: Type.String(), Purpose: Type.String() }, { description: 'SignatureRejected.data' });
const EventsLost = Type.Object({ after: Type.Integer(), epoch: Type.Integer() }, { description: 'EventsLost.data' });
const RoutedMessage = Type.Object(
  {
    from: Type.String(),
    to: Type.String(),
    id: Type.Optional(Type.String()),
    type: Type.String(),
    element: Type.Unknown({ description: 'The message element as JSON, or null' }),
    xml: Type.String({ description: 'The whole stanza' }),
  },
  { description: 'data of an Agent API event handler\'s event (docs/xmpp.md)' },
);

/** Component schemas of the channel, by name (each gets `$id` = its name when registered). */
export const CHANNEL_SCHEMAS: Record<string, TSchema> = {
  RegisterFrame,
  PingFrame,
  UnregisterFrame,
  EventFrame,
  QuickLoginResult,
  QuickLoginRejection,
  EventsLost,
  RoutedMessage,
};

const ref = (name: keyof typeof CHANNEL_SCHEMAS & string) => ({ $ref: `#/components/schemas/${name}` });

/** The `x-tabwire-channel` extension: the transports and each event's data. */
export const CHANNEL_EXTENSION = {
  websocket: {
    path: '/ClientEventsWS',
    subprotocol: EVENTS_SUBPROTOCOL,
    clientFrames: { oneOf: [ref('RegisterFrame'), ref('PingFrame'), ref('UnregisterFrame')] },
    serverFrames: ref('EventFrame'),
    closeCodes,
  },
  longPoll: {
    path: '/ClientEvents',
    request: 'POST, Content-Type text/plain, body = page location, header X-TabID (optional X-Last-Event-ID)',
    answer: { type: 'array', items: ref('EventFrame') },
  },
  events: {
    [EventTypes.SignatureReceived]: ref('QuickLoginResult'),
    [EventTypes.SignatureReceivedBE]: { type: 'string', const: '', description: 'Backend mode: the backend accepted the result' },
    [EventTypes.SignatureRejected]: ref('QuickLoginRejection'),
    [EventTypes.CheckServerInstance]: { type: 'string', description: 'The service instance id; a page reloads when it changes' },
    [EventTypes.EventsLost]: ref('EventsLost'),
    [EventTypes.NOP]: { description: 'Long-poll only, no data: nothing happened within the hold time' },
    '<function>': ref('RoutedMessage'),
  },
};

/** `info.description` (CommonMark): the API in a few lines, and what OpenAPI cannot say about the event channel. */
export const API_DESCRIPTION = `QR-code login (QuickLogin), a realtime event channel to browser tabs, and the Agent API.
Every refusal is \`application/problem+json\` (RFC 9457) with a stable \`code\` (docs/errors.md).
The whole protocol is in the project's docs/ (docs/protocol.md).

## The client event channel

A page opens one channel per tab and receives its events (results of its QR requests, XMPP messages routed to it).

- **WebSocket** \`GET /ClientEventsWS\` with \`Upgrade: websocket\` and subprotocol \`${EVENTS_SUBPROTOCOL}\` (RFC 6455).
  The \`101\` answer sets the session cookie \`tabwire_sid\` when the request had none.
  Frames in: \`RegisterFrame\`, \`PingFrame\` (every 10 s), \`UnregisterFrame\`. Frames out: \`EventFrame\`.
  Close codes: ${Object.entries(closeCodes).map(([name, code]) => `${code} ${name}`).join(', ')}.
- **Long-poll** \`POST /ClientEvents\` (text/plain body = page location, header \`X-TabID\`): answers a JSON array
  of \`EventFrame\`, held up to longPollHoldSeconds; \`[{"type":"NOP"}]\` when nothing came.

Events (\`EventFrame.type\` → \`data\`): \`SignatureReceived\` → \`QuickLoginResult\`, \`SignatureReceivedBE\` → \`""\`,
\`SignatureRejected\` → \`QuickLoginRejection\`, \`CheckServerInstance\` → instance id (string), \`EventsLost\` → \`EventsLost\`,
\`NOP\` (long-poll, no data), and an Agent API handler's \`function\` → \`RoutedMessage\`.
The machine-readable summary is the \`x-tabwire-channel\` extension of this document.`;
