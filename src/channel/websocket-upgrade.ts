import { STATUS_CODES, type IncomingMessage, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import type { Clock } from '../clock.js';
import { closeCodes, TabwireError } from '../errors.js';
import { EVENTS_SUBPROTOCOL } from '../protocol/frames.js';

/** What the route decides about a handshake: a session to bind the socket to, or a refusal. */
export type UpgradeDecision = { ok: true; sessionHash: string; setCookie?: string } | { ok: false; error: TabwireError };

export interface WebSocketUpgradeOptions {
  path: string;
  maxPayload: number;
  clock: Clock;
  pingTimeoutMs: number;
  /** Checks subprotocol, Origin and session of a handshake (no Fastify request exists for it). */
  decide: (request: IncomingMessage) => UpgradeDecision;
  /** Serves an accepted socket; returns a function that records a sign of life (any frame). */
  serve: (socket: WebSocket, sessionHash: string, alive: () => void) => void;
  /** Writes a refusal body (problem+json) for the handshake's response. */
  problem: (error: TabwireError, path: string) => string;
}

/**
 * The `/ClientEventsWS` handshake, handled on the HTTP server's `upgrade` event with `ws` directly
 * rather than through Fastify's request lifecycle: an upgraded socket then keeps no HTTP request,
 * reply or logger alive for its whole life (about 4 KiB per idle tab, docs/benchmarks.md). Refusals
 * are still problem+json answers before the upgrade. One timer watches every socket for missed pings.
 */
export class WebSocketUpgrade {
  readonly server: WebSocketServer;
  private readonly lastFrame = new Map<WebSocket, number>();
  private readonly pendingCookies = new WeakMap<IncomingMessage, string>();
  private readonly watchdog: NodeJS.Timeout;

  constructor(
    httpServer: Server,
    private readonly o: WebSocketUpgradeOptions,
  ) {
    this.server = new WebSocketServer({
      noServer: true,
      maxPayload: o.maxPayload,
      handleProtocols: (protocols) => (protocols.has(EVENTS_SUBPROTOCOL) ? EVENTS_SUBPROTOCOL : false),
    });
    this.server.on('headers', (headers, request) => {
      const cookie = this.pendingCookies.get(request);
      if (cookie !== undefined) headers.push(`Set-Cookie: ${cookie}`);
    });
    httpServer.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => this.onUpgrade(request, socket, head));
    this.watchdog = setInterval(() => this.closeSilent(), Math.min(5_000, o.pingTimeoutMs));
    this.watchdog.unref();
  }

  /** Closes every socket and stops watching (shutdown). */
  close(): void {
    clearInterval(this.watchdog);
    for (const socket of this.server.clients) socket.close(closeCodes.goingAway, 'shutdown');
    this.server.close();
  }

  private onUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void {
    socket.on('error', () => socket.destroy());
    const path = (request.url ?? '/').split('?')[0]!;
    if (path !== this.o.path) return this.refuse(socket, new TabwireError('not_found', `No WebSocket endpoint at ${path}`), path);
    let decision: UpgradeDecision;
    try {
      decision = this.o.decide(request);
    } catch (err) {
      decision = { ok: false, error: err instanceof TabwireError ? err : new TabwireError('internal_error') };
    }
    if (!decision.ok) return this.refuse(socket, decision.error, path);
    const { sessionHash, setCookie } = decision;
    if (setCookie !== undefined) this.pendingCookies.set(request, setCookie);
    this.server.handleUpgrade(request, socket, head, (ws) => {
      this.lastFrame.set(ws, this.o.clock.now());
      ws.on('close', () => this.lastFrame.delete(ws));
      ws.on('error', () => ws.terminate());
      this.o.serve(ws, sessionHash, () => this.lastFrame.set(ws, this.o.clock.now()));
    });
  }

  private refuse(socket: Duplex, error: TabwireError, path: string): void {
    const body = this.o.problem(error, path);
    socket.end(
      `HTTP/1.1 ${error.status} ${STATUS_CODES[error.status] ?? ''}\r\n` +
        'Content-Type: application/problem+json; charset=utf-8\r\n' +
        `Content-Length: ${Buffer.byteLength(body)}\r\n` +
        'Cache-Control: no-store\r\nConnection: close\r\n\r\n' +
        body,
    );
  }

  /** RFC 6455 leaves keep-alive to the application: a socket silent for pingTimeoutMs (3 pings) is closed. */
  private closeSilent(): void {
    const now = this.o.clock.now();
    for (const [socket, at] of this.lastFrame) {
      if (now - at >= this.o.pingTimeoutMs) socket.close(closeCodes.pingTimeout, 'ping_timeout');
    }
  }
}
