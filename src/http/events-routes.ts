import type { IncomingMessage } from 'node:http';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { holdPoll } from '../channel/long-poll.js';
import { retryThroughOutage } from '../channel/outage-wait.js';
import type { UpgradeDecision } from '../channel/websocket-upgrade.js';
import { TabwireError } from '../errors.js';
import type { Hub } from '../hub/hub.js';
import type { TabRegistry } from '../hub/registry.js';
import { EVENTS_SUBPROTOCOL, TAB_ID_PATTERN } from '../protocol/frames.js';
import type { TabStore } from '../store/stores.js';
import { documentAs, json, noBody, problems } from './openapi-schemas.js';
import { checkOrigin, checkOriginHeader } from './origin.js';
import { sendProblem } from './problem.js';
import { ensureSession, hashSession, newSessionId, SESSION_COOKIE, sessionCookieOptions, sessionIdOf, validSessionId, type CookiePolicy } from './session.js';

export interface EventsRoutesOptions {
  registry: TabRegistry;
  hub: Hub;
  tabs: TabStore;
  allowedOrigins: readonly string[];
  cookies: CookiePolicy;
  longPollHoldMs: number;
  /** Told to a session refused for holding too many tabs: when idle ones will have been let go. */
  tabIdleSeconds: number;
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
  const { registry, hub } = o;
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
   * buffered events may be gone.
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
    // Through an outage this look-up waits like the registration below (channel/outage-wait.ts).
    const writable = () => !reply.raw.destroyed && !request.raw.socket.destroyed;
    const known = () => retryThroughOutage(() => o.tabs.sessionOf(tabId), { deadline: performance.now() + o.longPollHoldMs, wanted: () => writable() && !stopping });
    if (lastEventId !== undefined && (await known()) === undefined) {
      throw new TabwireError('tab_not_registered', `Tab "${tabId}" is not known (any more); poll without X-Last-Event-ID to register it again`);
    }
    const newSession = sessionIdOf(request) === undefined;
    const sessionHash = ensureSession(request, reply, o.cookies);
    reply.header('cache-control', 'no-store');

    const answer = await holdPoll(
      { registry, hub, log: request.log as unknown as Logger, holdMs: o.longPollHoldMs, stopping: () => stopping },
      {
        tabId,
        session: sessionHash,
        location: typeof request.body === 'string' ? request.body.slice(0, 4096) : '',
        lastEventId,
        newSession,
        client: request.raw.socket,
        writable,
        onClientGone: (listener) => reply.raw.on('close', listener),
      },
    );
    switch (answer.kind) {
      case 'events':
        return reply.send(answer.frames);
      case 'idle':
        return reply.send([{ type: 'NOP' }]);
      case 'unavailable':
        // The store or Redis stayed unreachable for the whole hold time: 503 with Retry-After, as every
        // route answers an outage (docs/errors.md "Outages"); never 500.
        return sendProblem(reply, answer.error, request.url);
      case 'superseded':
        // Shutdown: an empty 200 (the reference client shows any other answer to the person) on a closing
        // connection, so the client's next poll opens a new one and reaches another node or a restarted one.
        if (answer.reason === 'shutdown') return reply.header('connection', 'close').send([]);
        if (answer.reason === 'tab_session_mismatch') return sendProblem(reply, new TabwireError('tab_session_mismatch', `Tab "${tabId}" belongs to another session`), request.url);
        if (answer.reason === 'tab_limit_reached') {
          return sendProblem(reply, new TabwireError('tab_limit_reached', undefined, { retryAfter: o.tabIdleSeconds }), request.url);
        }
        if (answer.reason === 'internal_error') return sendProblem(reply, new TabwireError('internal_error'), request.url);
        // Superseded (more live polls of the tab than it may have) or the client went away: an empty 200,
        // never an error the reference client would show; it polls again.
        return reply.send([]);
    }
  });
}
