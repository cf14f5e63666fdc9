import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import type { WebSocket } from 'ws';
import { closeCodes } from '../errors.js';
import type { TabAddress } from '../hub/address.js';
import type { TabConnection } from '../hub/connection.js';
import type { Hub } from '../hub/hub.js';
import type { TabRegistry } from '../hub/registry.js';
import { parseClientFrame, type EventFrame } from '../protocol/frames.js';

export interface WebSocketChannelOptions {
  registry: TabRegistry;
  hub: Hub;
  log: Logger;
}

/** A WebSocket as the hub sees it: frames out as JSON text, one message per event. */
class WebSocketConnection implements TabConnection {
  readonly transport = 'websocket';
  /** The socket's writes are held until the current burst of work is done (see `send`). */
  private corked = false;

  constructor(
    private readonly socket: WebSocket,
    private readonly raw: Duplex,
  ) {}

  get open(): boolean {
    return this.socket.readyState === this.socket.OPEN;
  }

  send(frames: readonly EventFrame[]): boolean {
    if (!this.open) return false;
    // Events that reach a tab in one burst (an XMPP stream hands over several stanzas per read, each routed
    // in microtasks) leave in one write instead of a system call each: the socket is corked until the
    // work of this turn, microtasks included, is done. One event alone waits for nothing else.
    if (!this.corked) {
      this.corked = true;
      this.raw.cork();
      process.nextTick(() => {
        this.corked = false;
        this.raw.uncork();
      });
    }
    for (const frame of frames) this.socket.send(JSON.stringify(frame));
    return true;
  }

  close(code: number, reason: string): void {
    if (code === closeCodes.goingAway) return this.failForReconnect();
    this.socket.close(code, reason);
  }

  /**
   * Shutdown only (docs/events.md "Restarts"). The older reference event script reconnects only after
   * a socket `error` and has no close handler, so a clean close (1001) would leave its page deaf for
   * good, and so would an abrupt TCP close (browsers fire only `close` 1006 for it). A text frame whose
   * payload is not UTF-8 makes the browser fail the connection (RFC 6455 §8.1), which fires `error`
   * and then `close`: that page retries after 5 s and finds the restarted service. Newer clients
   * reconnect on any close, so they are not harmed.
   */
  private failForReconnect(): void {
    if (!this.open) return this.socket.terminate();
    this.socket.send(Buffer.from([0xff]), { binary: false }, () => this.socket.terminate());
  }
}

/**
 * Serves one accepted `/ClientEventsWS` socket (docs/events.md): Register binds the tab to the
 * session, Ping keeps it alive, Unregister lets it go. Anything else closes the socket with a
 * documented code (errors.ts `closeCodes`).
 */
export function serveWebSocket(socket: WebSocket, session: string, o: WebSocketChannelOptions, alive: () => void, raw: Duplex): void {
  const connection = new WebSocketConnection(socket, raw);
  /** The tab this socket registered (or is registering: a close during Register must still detach it). */
  let address: TabAddress | undefined;

  // Frames are handled one at a time so a Register finishes before the next frame is looked at.
  let queue = Promise.resolve();
  socket.on('message', (data, isBinary) => {
    queue = queue.then(() => onFrame(isBinary ? undefined : data.toString())).catch((err: unknown) => {
      o.log.error({ err }, 'websocket frame handling failed');
      socket.close(1011, 'internal_error');
    });
  });

  async function onFrame(text: string | undefined): Promise<void> {
    alive();
    const frame = text === undefined ? undefined : parseClientFrame(text);
    if (!frame) return socket.close(closeCodes.frameInvalid, 'frame_invalid');
    switch (frame.cmd) {
      case 'Register': {
        if (address !== undefined && address.tabId !== frame.tabId) return socket.close(closeCodes.frameInvalid, 'tab_already_registered');
        const outcome = await o.registry.register(frame.tabId, session, connection, frame.location, frame.lastEventId);
        if (outcome === 'conflict') return socket.close(closeCodes.tabSessionMismatch, 'tab_session_mismatch');
        if (outcome === 'too_many_tabs') return socket.close(closeCodes.tabLimitReached, 'tab_limit_reached');
        address = { tabId: frame.tabId, session };
        // The socket may have closed while the Register was in the store: the hub must not keep it.
        if (!connection.open) o.hub.detach(address, connection);
        return;
      }
      case 'Ping':
        if (address !== undefined) o.hub.touch(address);
        return;
      case 'Unregister':
        if (address !== undefined) await o.registry.unregister(address);
        address = undefined;
        return;
    }
  }

  socket.on('close', () => {
    if (address !== undefined) o.hub.detach(address, connection);
  });
}
