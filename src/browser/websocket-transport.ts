import { closeCodes } from '../protocol/close-codes.js';
import { EVENTS_SUBPROTOCOL, type ClientFrame, type RegisterFrame } from '../protocol/frames.js';
import { SOCKET_OPEN, type SocketFactory, type SocketLike, type Timers } from './platform.js';
import type { Transport, TransportEnd, TransportLink } from './transport.js';

/** After a 1013 close: the service answers its HTTP outages with `Retry-After: 1`. */
export const TRY_AGAIN_LATER_MS = 1_000;

/** docs/signing.md: the client pings every 10 s; the service closes after 30 s of silence. */
export const PING_INTERVAL_MS = 10_000;

/** RFC 6455 §7.4.1: normal closure. */
const NORMAL_CLOSURE = 1000;

export interface WebSocketTransportDeps {
  WebSocket: SocketFactory;
  timers: Timers;
  pingIntervalMs?: number;
}

/** What the client does after a close with this code. */
export function endForClose(code: number, opened: boolean): TransportEnd {
  switch (code) {
    case closeCodes.tabSessionMismatch:
      return { kind: 'tab-rejected' };
    case closeCodes.replaced:
      return { kind: 'replaced' };
    // IANA's "Try Again Later": the service's store or shared state is unreachable (docs/events.md "Outages").
    case closeCodes.tryAgainLater:
      return { kind: 'unavailable', retryAfterMs: TRY_AGAIN_LATER_MS };
    default:
      return { kind: 'lost', opened };
  }
}

/**
 * One WebSocket to `/ClientEventsWS` with subprotocol `ls` (docs/events.md): Register on
 * open, Ping every 10 s, Unregister on a goodbye. Reports the end once; never reconnects itself.
 */
export function openWebSocket(link: TransportLink, deps: WebSocketTransportDeps): Transport {
  const { timers } = deps;
  const pingMs = deps.pingIntervalMs ?? PING_INTERVAL_MS;
  let opened = false;
  let done = false;
  let pingTimer: unknown;
  let socket: SocketLike | undefined;

  const send = (frame: ClientFrame): boolean => {
    if (!socket || socket.readyState !== SOCKET_OPEN) return false;
    try {
      socket.send(JSON.stringify(frame));
      return true;
    } catch {
      return false; // closing under us; the close event follows
    }
  };

  const schedulePing = (): void => {
    pingTimer = timers.setTimeout(() => {
      send({ cmd: 'Ping' });
      schedulePing();
    }, pingMs);
  };

  const release = (): void => {
    done = true;
    if (pingTimer !== undefined) timers.clearTimeout(pingTimer);
    if (socket) socket.onopen = socket.onmessage = socket.onclose = socket.onerror = null;
  };

  const finish = (end: TransportEnd): void => {
    if (done) return;
    release();
    link.end(end);
  };

  try {
    socket = new deps.WebSocket(link.url, EVENTS_SUBPROTOCOL);
  } catch {
    // A bad host or a blocked scheme throws at once; report it like a failed open, but later,
    // so the caller has its transport in hand before the end arrives.
    timers.setTimeout(() => finish({ kind: 'lost', opened: false }), 0);
    return {
      kind: 'websocket',
      stop() {
        release();
        return false;
      },
    };
  }

  socket.onopen = () => {
    opened = true;
    const lastEventId = link.lastEventId();
    const register: RegisterFrame = { cmd: 'Register', tabId: link.tabId(), location: link.location() };
    if (lastEventId !== undefined) register.lastEventId = lastEventId;
    send(register);
    schedulePing();
    link.ready();
  };
  socket.onmessage = (event) => link.frame(event.data);
  socket.onclose = (event) => finish(endForClose(event.code, opened));
  // Browsers follow an error with a close event; ending here as well covers sockets that do not.
  socket.onerror = () => {
    const s = socket;
    finish({ kind: 'lost', opened });
    try {
      s?.close();
    } catch {
      // already closing
    }
  };

  return {
    kind: 'websocket',
    stop(goodbye) {
      if (done) return false;
      const told = goodbye && send({ cmd: 'Unregister' });
      release();
      try {
        socket?.close(NORMAL_CLOSURE);
      } catch {
        // already closing
      }
      return told;
    },
  };
}
