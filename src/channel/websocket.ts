import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import type { RawData, WebSocket } from 'ws';
import { closeCodes, isOutage } from '../errors.js';
import type { TabAddress } from '../hub/address.js';
import type { TabConnection } from '../hub/connection.js';
import type { Hub } from '../hub/hub.js';
import type { TabRegistry } from '../hub/registry.js';
import { parseClientFrame, type EventFrame } from '../protocol/frames.js';
import { retryThroughOutage } from './outage-wait.js';

export interface WebSocketChannelOptions {
  registry: TabRegistry;
  hub: Hub;
  log: Logger;
  /**
   * How long a Register waits for an unreachable store or Redis before the socket is closed
   * `1013 store_unavailable` / `shared_state_unavailable` (docs/events.md "Outages").
   */
  outageWaitMs: number;
}

/**
 * One accepted `/ClientEventsWS` socket: the tab's connection as the hub sees it (frames out as JSON text, one
 * message per event) and the serving of its frames (docs/events.md: Register binds the tab to the session,
 * Ping keeps it alive, Unregister lets it go; anything else closes the socket with a documented code, errors.ts
 * `closeCodes`). Its state is fields of one object with methods on the prototype rather than closures made
 * per socket: thousands of idle tabs each keep only this object and one small listener here (docs/benchmarks.md
 * "channel-memory").
 */
class WebSocketTab implements TabConnection {
  readonly transport = 'websocket';
  /** The socket's writes are held until the current burst of work is done (see `send`). */
  private corked = false;
  /** The tab this socket registered (or is registering: a close during Register must still detach it). */
  private address: TabAddress | undefined;
  /**
   * Frames are handled one at a time so a Register finishes before the next frame is looked at. Undefined
   * while no frame is being handled (an idle tab keeps no promise).
   */
  private queue: Promise<void> | undefined;

  constructor(
    private readonly socket: WebSocket,
    private readonly raw: Duplex,
    private readonly session: string,
    private readonly o: WebSocketChannelOptions,
    private readonly alive: () => void,
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

  /** A message from the client, handled after the ones before it. */
  received(data: RawData, isBinary: boolean): void {
    // Any frame shows the client is there, also one that waits behind a Register held through an outage.
    this.alive();
    const next: Promise<void> = (this.queue ?? Promise.resolve())
      .then(() => this.onFrame(isBinary ? undefined : data.toString()))
      .catch((err: unknown) => {
        // An outage outlasted the wait: "try again later" with the outage's code, which clients retry
        // with the same tab; 1011 only for what is a fault of the service.
        if (isOutage(err)) return this.socket.close(closeCodes.tryAgainLater, err.code);
        this.o.log.error({ err }, 'websocket frame handling failed');
        this.socket.close(1011, 'internal_error');
      })
      .finally(() => {
        if (this.queue === next) this.queue = undefined;
      });
    this.queue = next;
  }

  /** The socket closed: the hub lets go of this connection. */
  closed(): void {
    if (this.address !== undefined) this.o.hub.detach(this.address, this);
  }

  private async onFrame(text: string | undefined): Promise<void> {
    const frame = text === undefined ? undefined : parseClientFrame(text);
    if (!frame) return this.socket.close(closeCodes.frameInvalid, 'frame_invalid');
    switch (frame.cmd) {
      case 'Register': {
        if (this.address !== undefined && this.address.tabId !== frame.tabId) return this.socket.close(closeCodes.frameInvalid, 'tab_already_registered');
        // Held through a short store or Redis outage (the socket stays open, the older reference script
        // has no close handler and would stay deaf after a close), then closed 1013 (see received).
        const register = () => this.o.registry.register(frame.tabId, this.session, this, frame.location, frame.lastEventId);
        // Known before the store is asked: a socket that closes meanwhile is detached from what was attached.
        const address = (this.address = { tabId: frame.tabId, session: this.session });
        const outcome = await retryThroughOutage(register, { deadline: performance.now() + this.o.outageWaitMs, wanted: () => this.open });
        // Refused: nothing was attached, and the tab is not this socket's.
        if (outcome !== 'ok') this.address = undefined;
        if (outcome === 'conflict') return this.socket.close(closeCodes.tabSessionMismatch, 'tab_session_mismatch');
        if (outcome === 'too_many_tabs') return this.socket.close(closeCodes.tabLimitReached, 'tab_limit_reached');
        // The socket may have closed while the Register was in the store: the hub must not keep it.
        if (!this.open) this.o.hub.detach(address, this);
        return;
      }
      case 'Ping':
        if (this.address !== undefined) this.o.hub.touch(this.address, this);
        return;
      case 'Unregister':
        if (this.address !== undefined) await this.o.registry.unregister(this.address, this);
        this.address = undefined;
        return;
    }
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
 * Serves one accepted `/ClientEventsWS` socket bound to `session` (see WebSocketTab). The caller calls
 * `closed()` on what it returns when the socket closes (websocket-upgrade.ts holds the close listener).
 */
export function serveWebSocket(socket: WebSocket, session: string, o: WebSocketChannelOptions, alive: () => void, raw: Duplex): { closed(): void } {
  const tab = new WebSocketTab(socket, raw, session, o, alive);
  socket.on('message', (data, isBinary) => tab.received(data, isBinary));
  return tab;
}
