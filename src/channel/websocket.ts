import type { Duplex } from 'node:stream';
import type { RawData, WebSocket } from 'ws';
import type { TabConnection } from '../hub/connection.js';
import { disconnects, type Disconnect } from '../hub/disconnect.js';
import { TabSession, type TabSessionNode } from '../hub/tab-session.js';
import { parseClientFrame, type ClientFrame, type EventFrame } from '../protocol/frames.js';

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

/** The node every socket's tab session ends in (hub/tab-session.ts), and how long a Register rides out an outage. */
export interface WebSocketChannelOptions extends TabSessionNode {
  /**
   * How long a Register waits for an unreachable store or Redis before the socket is closed
   * `1013 store_unavailable` / `shared_state_unavailable` (docs/events.md "Outages").
   */
  outageWaitMs: number;
}

/**
 * One accepted `/ClientEventsWS` socket: the tab's connection as the hub sees it (frames out as JSON text, one
 * message per event) and the parsing of its frames, each handed to the socket's tab session (docs/events.md:
 * Register binds the tab to the session, Ping keeps it alive, Unregister lets it go); what the session
 * answers with a Disconnect, and a frame that is none of those, closes the socket with its code
 * (hub/disconnect.ts). Its state is fields of one object with methods on the prototype rather than closures made
 * per socket: thousands of idle tabs each keep only this object and one small listener here (docs/benchmarks.md#idle-tabs).
 */
class WebSocketTab implements TabConnection {
  readonly transport = 'websocket';
  /** The socket's writes are held until the current burst of work is done (see `send`). */
  private corked = false;
  /** Everything the socket's frames ask of the registry and the hub goes through it. */
  private readonly tab: TabSession;
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
    session: string,
    private readonly o: WebSocketChannelOptions,
    private readonly alive: () => void,
  ) {
    this.tab = new TabSession(o, this, session);
  }

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

  close(disconnect: Disconnect): void {
    if (disconnect.kind === 'shutdown') return this.failForReconnect();
    this.socket.close(disconnect.closeCode, disconnect.reason);
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
      .then((ended) => {
        if (ended !== undefined) this.close(ended);
      })
      .catch((err: unknown) => {
        // The session maps outages and faults itself; this is a fault of the socket's own code.
        this.o.log.error({ err }, 'websocket frame handling failed');
        this.close(disconnects.internalError());
      })
      .finally(() => {
        if (this.queue === next) this.queue = undefined;
      });
    this.queue = next;
  }

  /** The socket closed: the hub lets go of this connection; what it still had to confirm did not arrive. */
  closed(): void {
    this.unconfirmed();
    this.tab.closed();
  }

  /** Hands a frame to the tab session; resolves with how the socket must end, if it must. */
  private async onFrame(text: string | undefined): Promise<Disconnect | undefined> {
    const frame: ClientFrame | undefined = text === undefined ? undefined : parseClientFrame(text);
    if (!frame) return disconnects.frameInvalid('frame_invalid');
    switch (frame.cmd) {
      case 'Register':
        // Held through a short store or Redis outage (the socket stays open: the older reference script has
        // no close handler and would stay deaf after a close), as long as a long-poll is held.
        return this.tab.register(frame, { deadline: performance.now() + this.o.outageWaitMs });
      case 'Ping':
        this.tab.ping();
        return undefined;
      case 'Unregister':
        return this.tab.unregister();
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
