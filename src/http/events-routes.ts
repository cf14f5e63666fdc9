import type { IncomingMessage } from 'node:http';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { LongPollConnection, type PollAnswer } from '../channel/long-poll.js';
import { serveWebSocket, type WebSocketChannelOptions } from '../channel/websocket.js';
import { TabwireError } from '../errors.js';
import type { TabStore } from '../store/stores.js';
import { EVENTS_SUBPROTOCOL, TAB_ID_PATTERN } from '../protocol/frames.js';
import { checkOrigin } from './origin.js';
import { sendProblem } from './problem.js';
import { ensureSession } from './session-cookie.js';
import { hashSession, newSessionId, SESSION_COOKIE, sessionCookieOptions, sessionIdOf, type CookiePolicy } from './session.js';

export interface EventsRoutesOptions {
  channel: WebSocketChannelOptions;
  tabs: TabStore;
  allowedOrigins: readonly string[];
  cookies: CookiePolicy;
  longPollHoldMs: number;
}

function offersSubprotocol(request: FastifyRequest): boolean {
  const header = request.headers['sec-websocket-protocol'];
  return typeof header === 'string' && header.split(',').some((p) => p.trim() === EVENTS_SUBPROTOCOL);
}

function header(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return typeof value === 'string' ? value : undefined;
}

/** The client event channel: WebSocket `/ClientEventsWS` (subprotocol `ls`) and long-poll `/ClientEvents`. */
export async function eventsRoutes(app: FastifyInstance, o: EventsRoutesOptions): Promise<void> {
  const { registry, hub } = o.channel;
  const sessionOfUpgrade = new WeakMap<IncomingMessage, string>();
  // A tab is bound to the session cookie; a first-time caller gets one on the 101 response itself.
  const newCookies = new WeakMap<IncomingMessage, string>();
  app.websocketServer.on('headers', (headers: string[], request: IncomingMessage) => {
    const cookie = newCookies.get(request);
    if (cookie !== undefined) headers.push(`Set-Cookie: ${cookie}`);
  });

  app.route({
    method: 'GET',
    url: '/ClientEventsWS',
    // Refusals happen before the upgrade, as plain HTTP problem+json answers.
    preValidation: async (request) => {
      if (!request.ws) throw new TabwireError('websocket_required');
      if (!offersSubprotocol(request)) {
        throw new TabwireError('subprotocol_required', `Offer the WebSocket subprotocol "${EVENTS_SUBPROTOCOL}"`);
      }
      checkOrigin(request, o.allowedOrigins);
      let sessionId = sessionIdOf(request);
      if (sessionId === undefined) {
        sessionId = newSessionId();
        newCookies.set(request.raw, app.serializeCookie(SESSION_COOKIE, sessionId, sessionCookieOptions(o.cookies)));
      }
      sessionOfUpgrade.set(request.raw, sessionId);
    },
    handler: async () => {
      throw new TabwireError('websocket_required');
    },
    wsHandler: (socket, request) => {
      const sessionId = sessionOfUpgrade.get(request.raw);
      if (sessionId === undefined) return socket.close(1011, 'internal_error');
      serveWebSocket(socket, hashSession(sessionId), o.channel);
    },
  });

  /**
   * Long-poll (wire-compatible with the reference client, REFERENCE-CLIENTS.md): body = page
   * location as text/plain, header X-TabID; the first poll of a tab registers it. Additive header
   * X-Last-Event-ID resumes a tab: if the service no longer knows it, 404 tells the client that
   * buffered events may be gone.
   */
  app.post('/ClientEvents', async (request, reply) => {
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
    if (lastEventId !== undefined && (await o.tabs.sessionOf(tabId)) === undefined) {
      throw new TabwireError('tab_not_registered', `Tab "${tabId}" is not known (any more); poll without X-Last-Event-ID to register it again`);
    }
    const newSession = sessionIdOf(request) === undefined;
    const sessionHash = ensureSession(request, reply, o.cookies);
    reply.header('cache-control', 'no-store');

    let connection!: LongPollConnection;
    let timer: NodeJS.Timeout | undefined;
    const answer = await new Promise<PollAnswer>((resolve) => {
      connection = new LongPollConnection(resolve, () => !reply.raw.destroyed && !request.raw.socket.destroyed);
      timer = setTimeout(() => connection.idle(), o.longPollHoldMs);
      // A response closed before it was answered: the client went away. What reaches the tab now waits in its outbox.
      reply.raw.on('close', () => connection.close(0, 'client_gone'));
      registry.register(tabId, sessionHash, connection, lastEventId).then(
        (outcome) => {
          if (outcome === 'conflict') return connection.close(0, 'tab_session_mismatch');
          hub.touch(tabId);
          // A new session's cookie rides on this answer: answer at once (empty) so the page has it for its
          // QR requests now, not after the hold time. The client polls again immediately.
          if (newSession) connection.send([]);
        },
        (err: unknown) => {
          request.log.error({ err }, 'long-poll registration failed');
          connection.close(0, 'internal_error');
        },
      );
    });
    clearTimeout(timer);
    hub.detach(tabId, connection);
    switch (answer.kind) {
      case 'events':
        return reply.send(answer.frames);
      case 'idle':
        return reply.send([{ type: 'NOP' }]);
      case 'superseded':
        if (answer.reason === 'tab_session_mismatch') return sendProblem(reply, new TabwireError('tab_session_mismatch', `Tab "${tabId}" belongs to another session`), request.url);
        if (answer.reason === 'internal_error') return sendProblem(reply, new TabwireError('internal_error'), request.url);
        return sendProblem(reply, new TabwireError('poll_superseded', `This poll was answered because ${answer.reason === 'replaced' ? 'a newer connection of the tab took over' : answer.reason}`), request.url);
    }
  });
}
