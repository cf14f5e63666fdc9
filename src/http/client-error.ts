import type { Duplex } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { TabwireError } from '../errors.js';
import { rawProblemResponse } from './problem.js';

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
