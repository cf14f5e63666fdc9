import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import type { RawData, WebSocket } from 'ws';
import { isOutage } from '../errors.js';
import { closeCodes } from '../protocol/close-codes.js';
import type { TabAddress } from '../protocol/address.js';
import type { TabConnection } from '../hub/connection.js';
import type { Hub } from '../hub/hub.js';
import type { TabRegistry } from '../hub/registry.js';
import { parseClientFrame, type EventFrame } from '../protocol/frames.js';
import { retryThroughOutage } from './outage-wait.js';

/** Ping payloads are unique per process, so a pong answers the one ping it echoes (RFC 6455 §5.5.3). */
let pings = 0;

/** The confirmations one socket awaits (made when its first is asked for; most tabs never get an XMPP message). */
interface Confirming {
  /** Covered by the ping in flight (written before it); undefined while no ping is in flight. */
  inFlight: ((reached: boolean) => void)[] | undefined;
  /** Written after that ping: covered by the next one. */
  next: ((reached: boolean) => void)[];
  /** The payload of the ping in flight. */
  tag: string;
}

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
 * per socket: thousands of idle tabs each keep only this object and one small listener here
 * (docs/benchmarks.md#idle-tabs).
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
  /** Confirmations awaited from this socket's client (`confirm`); undefined while none are. */
  private confirming: Confirming | undefined;

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
        // One ping per burst, after its frames: its pong confirms all of them.
        if (this.confirming?.inFlight === undefined && this.confirming?.next.length) this.ping();
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
   * RFC 6455 §5.5.2-5.5.3: the client answers a ping with a pong as soon as it can, after the frames
   * before it; browsers do so on their own, whatever the page's script. So the pong to a ping sent after
   * a burst says that the burst reached the client (docs/xmpp.md "Delivered means confirmed").
   */
  confirm(done: (reached: boolean) => void): void {
    if (!this.open) return done(false);
    if (this.confirming === undefined) {
      this.confirming = { inFlight: undefined, next: [], tag: '' };
      this.socket.on('pong', (data) => this.ponged(data));
    }
    this.confirming.next.push(done);
    // Within a burst the ping waits for its end (see `send`).
    if (this.confirming.inFlight === undefined && !this.corked) this.ping();
  }

  private ping(): void {
    const confirming = this.confirming!;
    confirming.inFlight = confirming.next;
    confirming.next = [];
    confirming.tag = String(++pings);
    this.socket.ping(confirming.tag);
  }

  private ponged(data: Buffer): void {
    const confirming = this.confirming;
    if (confirming?.inFlight === undefined || data.toString() !== confirming.tag) return;
    const reached = confirming.inFlight;
    confirming.inFlight = undefined;
    for (const done of reached) done(true);
    if (confirming.next.length > 0 && !this.corked && this.open) this.ping();
  }

  /** The socket closed: nothing awaited from it can come any more. */
  private unconfirmed(): void {
    const confirming = this.confirming;
    if (confirming === undefined) return;
    this.confirming = undefined;
    for (const done of [...(confirming.inFlight ?? []), ...confirming.next]) done(false);
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

  /** The socket closed: the hub lets go of this connection; what it still had to confirm did not arrive. */
  closed(): void {
    this.unconfirmed();
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
