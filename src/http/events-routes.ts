import type { IncomingMessage } from 'node:http';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { serveWebSocket, type WebSocketChannelOptions } from '../channel/websocket.js';
import { TabwireError } from '../errors.js';
import { EVENTS_SUBPROTOCOL } from '../protocol/frames.js';
import { checkOrigin } from './origin.js';
import { hashSession, newSessionId, SESSION_COOKIE, sessionCookieOptions, sessionIdOf, type CookiePolicy } from './session.js';

export interface EventsRoutesOptions {
  channel: WebSocketChannelOptions;
  allowedOrigins: readonly string[];
  cookies: CookiePolicy;
}

const sessionOfUpgrade = new WeakMap<IncomingMessage, string>();

function offersSubprotocol(request: FastifyRequest): boolean {
  const header = request.headers['sec-websocket-protocol'];
  return typeof header === 'string' && header.split(',').some((p) => p.trim() === EVENTS_SUBPROTOCOL);
}

/** The client event channel: WebSocket `/ClientEventsWS` with subprotocol `ls` (SPEC.md). */
export async function eventsRoutes(app: FastifyInstance, o: EventsRoutesOptions): Promise<void> {
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
}
