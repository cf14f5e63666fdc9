import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { TabwireError } from '../errors.js';
import { problemOf, PROBLEM_CONTENT_TYPE, rawProblemResponse } from './problem.js';
import { PROTOCOL_VERSION, PROTOCOL_VERSION_HEADER } from '../protocol/version.js';

/** How long a refused connection may take to flush its answer before it is cut. */
const FLUSH_MS = 5_000;

/** The refusal for an error Node's HTTP server reports before any request exists; undefined when nobody is left to answer. */
function problemFor(error: NodeJS.ErrnoException & { reason?: string }): TabwireError | undefined {
  if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') return new TabwireError('request_timeout', 'The request headers or body did not arrive in time');
  // llhttp's limit on the request line and header fields together (Node's maxHeaderSize); RFC 6585 §5.
  if (error.code === 'HPE_HEADER_OVERFLOW') return new TabwireError('header_too_large', 'The request line and header fields exceed the size the service accepts');
  if (error.code?.startsWith('HPE_')) return new TabwireError('request_malformed', error.reason ?? 'The request is not well-formed HTTP/1.1');
  return undefined; // ECONNRESET, EPIPE ...: the peer is gone.
}

/**
 * Fastify's `clientErrorHandler` (Node's `clientError` event): the parser refused the request (bad syntax,
 * headers too large) or it timed out, so no Fastify request exists. The answer is problem+json like any other,
 * written on the raw socket, which then closes. Nothing is written when a response on this connection has
 * already started (a second status line would corrupt it) or when the socket is already ending.
 */
export function clientErrorHandler(this: FastifyInstance, error: NodeJS.ErrnoException, socket: Duplex): void {
  if (socket.destroyed || socket.writableEnded) return;
  const problem = problemFor(error);
  const inFlight = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } | null })._httpMessage;
  if (problem === undefined || !socket.writable || inFlight?.headersSent) {
    socket.destroy();
    return;
  }
  this.log.debug({ err: error }, 'client error');
  socket.on('error', () => socket.destroy());
  const cut = setTimeout(() => socket.destroy(), FLUSH_MS).unref();
  socket.once('close', () => clearTimeout(cut));
  socket.end(rawProblemResponse(problem), () => socket.destroy());
}

/**
 * The answers Node's HTTP server gives by itself outside `clientError`, with an empty body, made problem+json:
 * - RFC 9112 §3.2: an HTTP/1.1 request without Host is a 400. Node's own check is turned off and a hook
 *   refuses it instead, with the catalogue's answer.
 * - RFC 9110 §10.1.1: an Expect other than 100-continue is refused with 417.
 * - RFC 9110 §9.3.6: CONNECT is for proxies; this service is none (Node would just drop the connection).
 */
export function answerNodeRefusals(app: FastifyInstance): void {
  const server = app.server as Server & { requireHostHeader: boolean };
  server.requireHostHeader = false;
  // A callback hook, not an async one: it runs on every request, and a promise each costs microtask turns.
  app.addHook('onRequest', (request, _reply, done) => {
    if (request.raw.httpVersion === '1.1' && request.headers.host === undefined) {
      done(new TabwireError('request_malformed', 'An HTTP/1.1 request must carry a Host header (RFC 9112 §3.2)'));
      return;
    }
    done();
  });
  server.on('checkExpectation', (request: IncomingMessage, response: ServerResponse) => {
    const error = new TabwireError('expectation_failed', 'Only "Expect: 100-continue" is supported');
    const body = JSON.stringify(problemOf(error, (request.url ?? '/').split('?')[0]));
    response.writeHead(error.status, {
      'content-type': `${PROBLEM_CONTENT_TYPE}; charset=utf-8`,
      'content-length': Buffer.byteLength(body),
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
      [PROTOCOL_VERSION_HEADER]: String(PROTOCOL_VERSION),
      connection: 'close',
    });
    response.end(body);
  });
  server.on('connect', (_request: IncomingMessage, socket: Duplex) => {
    socket.on('error', () => socket.destroy());
    socket.end(rawProblemResponse(new TabwireError('method_not_allowed', 'CONNECT is not supported: this service is not a proxy'), undefined, { Allow: 'GET, POST' }));
  });
}
