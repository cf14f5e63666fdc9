import type { IncomingMessage } from 'node:http';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { checkResume, holdPoll, type LongPollChannelOptions, type PollAnswer } from '../channel/long-poll.js';
import type { UpgradeDecision } from '../channel/websocket-upgrade.js';
import { TabwireError } from '../errors.js';
import type { Hub } from '../hub/hub.js';
import type { TabRegistry } from '../hub/registry.js';
import { EVENTS_SUBPROTOCOL, TAB_ID_PATTERN } from '../protocol/frames.js';
import { documentAs, json, noBody, problems } from './openapi-schemas.js';
import { checkOrigin, checkOriginHeader } from './origin.js';
import { sendProblem } from './problem.js';
import { ensureSession, hashSession, newSessionId, SESSION_COOKIE, sessionCookieOptions, sessionIdOf, validSessionId, type CookiePolicy } from './session.js';

export interface EventsRoutesOptions {
  /** With `hub`: the node each poll's tab session ends in (hub/tab-session.ts). */
  registry: TabRegistry;
  hub: Hub;
  allowedOrigins: readonly string[];
  cookies: CookiePolicy;
  longPollHoldMs: number;
}

function header(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return typeof value === 'string' ? value : undefined;
}

const offersSubprotocol = (header: string | string[] | undefined): boolean =>
  typeof header === 'string' && header.split(',').some((p) => p.trim() === EVENTS_SUBPROTOCOL);

/**
 * The WebSocket handshake's checks (the upgrade itself is channel/websocket-upgrade.ts): subprotocol
 * `ls`, an allowed Origin, and the session cookie; a first-time caller gets one on the 101 response.
 */
export function decideUpgrade(app: FastifyInstance, o: { allowedOrigins: readonly string[]; cookies: CookiePolicy }) {
  return (request: IncomingMessage): UpgradeDecision => {
    if (!offersSubprotocol(request.headers['sec-websocket-protocol'])) {
      return { ok: false, error: new TabwireError('subprotocol_required', `Offer the WebSocket subprotocol "${EVENTS_SUBPROTOCOL}"`) };
    }
    checkOriginHeader(request.headers.origin, o.allowedOrigins);
    const existing = validSessionId(app.parseCookie(request.headers.cookie ?? '')[SESSION_COOKIE]);
    if (existing !== undefined) return { ok: true, sessionHash: hashSession(existing) };
    const sessionId = newSessionId();
    return { ok: true, sessionHash: hashSession(sessionId), setCookie: app.serializeCookie(SESSION_COOKIE, sessionId, sessionCookieOptions(o.cookies)) };
  };
}

const eventFrames = Type.Array(Type.Ref('EventFrame'));

// The upgrade itself is answered outside Fastify (channel/websocket-upgrade.ts); this documents it too.
const websocketSchema = {
  tags: ['Events'],
  summary: 'The event channel over WebSocket (subprotocol ls)',
  description:
    'With `Upgrade: websocket` and `Sec-WebSocket-Protocol: ls` (RFC 6455) the answer is `101` and the socket carries ' +
    'the frames of `x-tabwire-channel` (docs/events.md); without an upgrade, `426 websocket_required`.',
  response: {
    101: noBody('Switching Protocols; sets the session cookie `tabwire_sid` when the request had none'),
    ...problems('websocket_required', 'websocket_version_unsupported', 'subprotocol_required', 'websocket_handshake_invalid', 'origin_not_allowed'),
  },
};

const tabIdHeader = { type: 'string', pattern: TAB_ID_PATTERN.source, description: 'The tab (8..64 of A-Z a-z 0-9 _ -)' };
const longPollSchema = {
  tags: ['Events'],
  summary: 'The event channel over long-poll',
  description: 'The first poll of a tab registers it, like a WebSocket Register (docs/events.md "Long-poll").',
  consumes: ['text/plain'],
  // Any body: the page location as text/plain (ignored when it is not text).
  body: Type.Unknown({ description: 'The page location' }),
  response: {
    200: json(eventFrames, 'Events for the tab; `[{"type":"NOP"}]` when none came within the hold time; `[]` when the poll was superseded'),
    ...problems('tab_id_missing', 'validation_failed', 'origin_not_allowed', 'tab_session_mismatch', 'tab_not_registered', 'tab_limit_reached', 'body_too_large', 'unsupported_media_type'),
  },
};
// X-TabID is checked by the handler (so a missing one is `tab_id_missing`), documented here.
const longPollDocumented = documentAs({
  body: Type.String({ description: 'The page location (its first 4096 characters are kept)' }),
  headers: {
    type: 'object',
    required: ['x-tabid'],
    properties: {
      'x-tabid': tabIdHeader,
      'x-last-event-id': { type: 'string', pattern: '^[0-9]+$', description: 'Additive: the last event id the client saw (resumes the tab)' },
    },
  },
});

/** The client event channel over plain HTTP: long-poll `/ClientEvents`, and a 426 for a GET of the WebSocket URL. */
export async function eventsRoutes(app: FastifyInstance, o: EventsRoutesOptions): Promise<void> {
  // A poll waiting through a store outage is not in the hub yet, so the hub's close does not answer it.
  let stopping = false;
  app.addHook('preClose', async () => {
    stopping = true;
  });
  app.get('/ClientEventsWS', { schema: websocketSchema }, async () => {
    throw new TabwireError('websocket_required');
  });

  /**
   * Long-poll (wire-compatible with the reference client, docs/events.md "Long-poll"): body = page
   * location as text/plain, header X-TabID; the first poll of a tab registers it. Additive header
   * X-Last-Event-ID resumes a tab: if the service no longer knows it, 404 tells the client that
   * buffered events may be gone. Parsing and writing only: the poll's tab session does the rest.
   */
  app.post('/ClientEvents', { schema: longPollSchema, config: longPollDocumented }, async (request, reply) => {
    checkOrigin(request, o.allowedOrigins);
    const tabId = header(request, 'x-tabid');
    if (tabId === undefined || !TAB_ID_PATTERN.test(tabId)) {
      throw new TabwireError('tab_id_missing', 'Send the tab ID in the X-TabID header (8..64 of A-Z a-z 0-9 _ -)');
    }
    const lastHeader = header(request, 'x-last-event-id');
    const lastEventId = lastHeader === undefined ? undefined : Number(lastHeader);
    if (lastEventId !== undefined && !(Number.isSafeInteger(lastEventId) && lastEventId >= 0)) {
      throw new TabwireError('validation_failed', 'X-Last-Event-ID must be a non-negative integer');
    }
    const channel: LongPollChannelOptions = { registry: o.registry, hub: o.hub, log: request.log as unknown as Logger, holdMs: o.longPollHoldMs, stopping: () => stopping };
    const writable = () => !reply.raw.destroyed && !request.raw.socket.destroyed;
    const existing = sessionIdOf(request);
    // Before the session cookie is set: a refused resume hands out none.
    const refused = lastEventId === undefined ? undefined : await checkResume(channel, tabId, existing === undefined ? undefined : hashSession(existing), writable);
    if (refused !== undefined) return answer(reply, refused, tabId, request.url);
    const sessionHash = ensureSession(request, reply, o.cookies);
    reply.header('cache-control', 'no-store');

    const held = await holdPoll(channel, {
      tabId,
      session: sessionHash,
      location: typeof request.body === 'string' ? request.body.slice(0, 4096) : '',
      lastEventId,
      newSession: existing === undefined,
      client: request.raw.socket,
      writable,
      onClientGone: (listener) => reply.raw.on('close', listener),
    });
    return answer(reply, held, tabId, request.url);
  });
}

/** Writes a poll's answer. The reference client shows any non-200 answer to the person (alert()): only refusals are problems. */
function answer(reply: FastifyReply, answer: PollAnswer, tabId: string, instance: string): FastifyReply {
  switch (answer.kind) {
    case 'events':
      return reply.send(answer.frames);
    case 'idle':
      return reply.send([{ type: 'NOP' }]);
    case 'gone':
      return reply.send([]);
    case 'forgotten':
      return sendProblem(reply, new TabwireError('tab_not_registered', `Tab "${tabId}" is not known (any more); poll without X-Last-Event-ID to register it again`), instance);
    case 'ended': {
      const { disconnect } = answer;
      // A refusal, an outage that outlasted the hold time (503 with Retry-After, never 500: docs/errors.md
      // "Outages"), a fault.
      if (disconnect.problem !== undefined) return sendProblem(reply, disconnect.problem, instance);
      // Shutdown: an empty 200 on a closing connection, so the client's next poll opens a new one and reaches
      // another node or a restarted one. Superseded (more live polls of the tab than it may have): an empty
      // 200 too, never an error; the client polls again.
      if (disconnect.kind === 'shutdown') reply.header('connection', 'close');
      return reply.send([]);
    }
  }
}
