import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import type { Clock } from '../clock.js';
import { TabwireError } from '../errors.js';
import { disconnects } from '../hub/disconnect.js';
import { closeCodes } from '../protocol/close-codes.js';
import { EVENTS_SUBPROTOCOL } from '../protocol/frames.js';
import { PROTOCOL_VERSION, PROTOCOL_VERSION_HEADER } from '../protocol/version.js';
import { serveAsPlainRequest } from './plain-request.js';

/** What the route decides about a handshake: a session to bind the socket to, or a refusal. */
export type UpgradeDecision = { ok: true; sessionHash: string; setCookie?: string } | { ok: false; error: TabwireError };

export interface WebSocketUpgradeOptions {
  path: string;
  maxPayload: number;
  clock: Clock;
  pingTimeoutMs: number;
  /**
   * At shutdown, a socket still not closed this long after `close` is cut (docs/deployment.md "Stopping a
   * node"): its peer may never answer the close handshake.
   */
  closeDeadlineMs: number;
  /** Checks subprotocol, Origin and session of a handshake (no Fastify request exists for it). */
  decide: (request: IncomingMessage) => UpgradeDecision;
  /**
   * Serves an accepted socket. `alive` records a sign of life (any frame); `raw` is the upgraded TCP (or TLS)
   * socket under `socket`, for corking its writes. The upgrade holds the socket's one close listener and
   * calls `closed()` on what this returns, once.
   */
  serve: (socket: WebSocket, sessionHash: string, alive: () => void, raw: Duplex) => { closed(): void };
  /** A whole HTTP response refusing the handshake (problem+json), with the extra header fields given. */
  refusal: (error: TabwireError, path: string, headers: Record<string, string>) => string;
}

/** RFC 6455 §4.2.1: the base64 of 16 random bytes. */
const KEY_PATTERN = /^[+/0-9A-Za-z]{22}==$/;
/** RFC 6455 §4.4: the one version spoken; a refusal names it in Sec-WebSocket-Version. */
const VERSION = '13';

type Refusal = { error: TabwireError; headers?: Record<string, string> };

/** RFC 6455 §4.2.1-4.2.2: what makes a handshake malformed, checked here so `ws` never answers (it writes text/html). */
function handshakeRefusal(request: IncomingMessage): Refusal | undefined {
  if (request.method !== 'GET') {
    return { error: new TabwireError('method_not_allowed', 'A WebSocket handshake is a GET request'), headers: { Allow: 'GET' } };
  }
  const version = request.headers['sec-websocket-version'];
  if (version === undefined) {
    const error = new TabwireError('websocket_handshake_invalid', 'The Sec-WebSocket-Version header is missing');
    return { error, headers: { 'Sec-WebSocket-Version': VERSION } };
  }
  if (version.trim() !== VERSION) {
    const error = new TabwireError('websocket_version_unsupported', `WebSocket version ${version} is not supported; use ${VERSION}`);
    return { error, headers: { 'Sec-WebSocket-Version': VERSION } };
  }
  const key = request.headers['sec-websocket-key'];
  if (key === undefined || !KEY_PATTERN.test(key)) {
    return { error: new TabwireError('websocket_handshake_invalid', 'The Sec-WebSocket-Key header is missing or not the base64 of 16 bytes') };
  }
  return undefined;
}

/** RFC 6455 §4.2.1 item 3: a WebSocket handshake says `Upgrade: websocket` (case-insensitive); other upgrades are declined. */
const wantsWebSocket = (request: IncomingMessage): boolean => request.headers.upgrade?.trim().toLowerCase() === 'websocket';

/**
 * The HTTP server's `shouldUpgradeCallback` (Node.js 24.9 and later, current 22 releases): only a WebSocket
 * handshake on `path` reaches the `upgrade` event; any other request with an Upgrade header is an ordinary
 * request to Node, body and all (RFC 9110 §7.8). Needed since Node.js 26, which passes such a request's body
 * to the request rather than in `head`, so serving it again from the raw socket (plain-request.ts) would lose
 * the body. Node.js without the option (20) ignores it, and every upgrade still goes to `onUpgrade`.
 */
export const upgradesOnly =
  (path: string) =>
  (request: IncomingMessage): boolean =>
    pathOf(request) === path && wantsWebSocket(request);

/**
 * The `/ClientEventsWS` handshake, handled on the HTTP server's `upgrade` event with `ws` directly
 * rather than through Fastify's request lifecycle: an upgraded socket then keeps no HTTP request,
 * reply or logger alive for its whole life (about 4 KiB per idle tab, docs/benchmarks.md#idle-tabs). Refusals
 * are still problem+json answers before the upgrade. One timer watches every socket for missed pings.
 */
export class WebSocketUpgrade {
  readonly server: WebSocketServer;
  private readonly lastFrame = new Map<WebSocket, number>();
  private readonly pendingCookies = new WeakMap<IncomingMessage, string>();
  private readonly watchdog: NodeJS.Timeout;
  private closing = false;

  constructor(
    private readonly httpServer: Server,
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
      // The 101 says which protocol the frames follow, as every HTTP answer does (docs/protocol.md "Versioning").
      headers.push(`${PROTOCOL_VERSION_HEADER}: ${PROTOCOL_VERSION}`);
    });
    // What `ws` still refuses after handshakeRefusal (a Sec-WebSocket-Protocol it cannot parse) comes here
    // instead of its text/html answer.
    this.server.on('wsClientError', (error: Error, socket: Duplex, request: IncomingMessage) =>
      this.refuse(socket, { error: new TabwireError('websocket_handshake_invalid', error.message) }, pathOf(request)),
    );
    httpServer.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => this.onUpgrade(request, socket, head));
    this.watchdog = setInterval(() => this.closeSilent(), Math.min(5_000, o.pingTimeoutMs));
    this.watchdog.unref();
  }

  /**
   * Closes every socket and stops watching (shutdown). A socket still there after `closeDeadlineMs` is cut:
   * `ws` waits 30 s for the peer's side of a close handshake (RFC 6455 §7.1.1 lets the server close the TCP
   * connection first, but `ws` waits for the peer's FIN after its own), so a peer that sent its close frame and
   * went silent, or one that stopped reading, would otherwise hold the process that long. Idempotent.
   */
  close(): void {
    if (this.closing) return;
    this.closing = true;
    clearInterval(this.watchdog);
    for (const socket of this.server.clients) socket.close(closeCodes.goingAway, 'shutdown');
    this.server.close();
    if (this.server.clients.size === 0) return;
    // Unref'd: the sockets keep the process alive until they are gone, and then nothing is left to cut.
    setTimeout(() => {
      for (const socket of this.server.clients) socket.terminate();
    }, this.o.closeDeadlineMs).unref();
  }

  private onUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void {
    const path = pathOf(request);
    // Any other path, or another protocol (`Upgrade: h2c` from `curl --http2`), is an ordinary HTTP request.
    if (path !== this.o.path || !wantsWebSocket(request)) return serveAsPlainRequest(this.httpServer, request, socket, head);
    socket.on('error', () => socket.destroy());
    const malformed = handshakeRefusal(request);
    if (malformed) return this.refuse(socket, malformed, path);
    if (this.closing) return this.refuse(socket, { error: new TabwireError('shutting_down') }, path);
    let decision: UpgradeDecision;
    try {
      decision = this.o.decide(request);
    } catch (err) {
      decision = { ok: false, error: err instanceof TabwireError ? err : new TabwireError('internal_error') };
    }
    if (!decision.ok) return this.refuse(socket, { error: decision.error }, path);
    const { sessionHash, setCookie } = decision;
    if (setCookie !== undefined) this.pendingCookies.set(request, setCookie);
    this.server.handleUpgrade(request, socket, head, (ws) => {
      this.lastFrame.set(ws, this.o.clock.now());
      ws.on('error', () => ws.terminate());
      // One close listener for the watchdog's map and the tab (ws keeps one more for its client list): a third
      // would grow the socket's listener array from 2 slots to 20 (~140 B per idle tab,
      // docs/benchmarks.md#idle-tabs). Added before `serve`, so the map is cleaned even if serving failed.
      let served: { closed(): void } | undefined;
      ws.on('close', () => {
        this.lastFrame.delete(ws);
        served?.closed();
      });
      served = this.o.serve(ws, sessionHash, () => this.lastFrame.set(ws, this.o.clock.now()), socket);
    });
  }

  private refuse(socket: Duplex, refusal: Refusal, path: string): void {
    // Closed once flushed: the server's sockets allow half-open, and a refused client may never end its side.
    if (socket.writable) socket.end(this.o.refusal(refusal.error, path, refusal.headers ?? {}), () => socket.destroy());
    else socket.destroy();
  }

  /** RFC 6455 leaves keep-alive to the application: a socket silent for pingTimeoutMs (3 pings) is closed. */
  private closeSilent(): void {
    const now = this.o.clock.now();
    for (const [socket, at] of this.lastFrame) {
      if (now - at >= this.o.pingTimeoutMs) socket.close(disconnects.pingTimeout.closeCode, disconnects.pingTimeout.reason);
    }
  }
}

const pathOf = (request: IncomingMessage): string => (request.url ?? '/').split('?')[0]!;
