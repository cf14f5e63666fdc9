import { connect as netConnect, createServer as createNetServer, type Server, type Socket } from 'node:net';
import { connect as tlsConnect, createServer as createTlsServer } from 'node:tls';

/**
 * A loopback TCP proxy in front of a service that can hold connections back: a slow network as a
 * test can switch it on and off. It reads a connection's request head first, so it knows a WebSocket
 * handshake (`Upgrade: websocket`) from any other request; held connections reach the service only
 * when their hold ends. With `tls` it terminates TLS with that certificate and speaks TLS to the
 * service again, so it can see the request head on https too. Bytes are otherwise passed through
 * unchanged in both directions, close frames and FINs included.
 */
export interface DelayProxy {
  readonly port: number;
  /** Hold every WebSocket handshake this long after it arrives (0: none). */
  webSocketDelayMs: number;
  /**
   * Answer `502 Bad Gateway` (and close) when the service refuses the connection, as a reverse proxy does
   * while the service restarts; off: the client's connection is cut.
   */
  badGatewayWhenDown: boolean;
  /** 502 answers given so far. */
  readonly badGateways: number;
  /** Holds every WebSocket handshake arriving from now on until the returned function is called. */
  holdWebSockets(): () => void;
  /** Holds every connection arriving from now on, of any kind, until the returned function is called. */
  holdAll(): () => void;
  /** WebSocket handshakes seen so far, and how many of them are being held right now. */
  readonly webSocketsSeen: number;
  readonly held: number;
  close(): Promise<void>;
}

export interface DelayProxyOptions {
  targetPort: number;
  targetHost?: string;
  /** Terminate TLS with this certificate (and connect to the service over TLS). */
  tls?: { cert: Buffer; key: Buffer };
}

const HEAD_LIMIT = 16_384;
const isWebSocketHandshake = (head: string): boolean => /\r\nupgrade:[ \t]*websocket[ \t]*\r\n/i.test(head);

export async function startDelayProxy(o: DelayProxyOptions): Promise<DelayProxy> {
  const targetHost = o.targetHost ?? '127.0.0.1';
  const sockets = new Set<Socket>();
  /** What holds WebSocket handshakes, and what holds every connection, while a hold is on. */
  const gates: { webSocket?: Promise<void>; all?: Promise<void> } = {};
  let seen = 0;
  let held = 0;
  let badGateways = 0;

  /** Puts a new gate in `kind`'s place; the returned function opens it (and clears the place unless a later hold took it). */
  function hold(kind: keyof typeof gates): () => void {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    gates[kind] = gate;
    return () => {
      if (gates[kind] === gate) gates[kind] = undefined;
      release();
    };
  }

  function track(socket: Socket): void {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
  }

  function onConnection(client: Socket): void {
    track(client);
    let head = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      head = Buffer.concat([head, chunk]);
      if (head.indexOf('\r\n\r\n') === -1 && head.length < HEAD_LIMIT) return;
      client.off('data', onData);
      client.pause();
      void forward(client, head);
    };
    client.on('data', onData);
  }

  async function forward(client: Socket, head: Buffer): Promise<void> {
    const webSocket = isWebSocketHandshake(head.toString('latin1'));
    if (webSocket) seen++;
    const waits: Promise<void>[] = [];
    if (gates.all) waits.push(gates.all);
    if (webSocket && gates.webSocket) waits.push(gates.webSocket);
    if (webSocket && proxy.webSocketDelayMs > 0) waits.push(new Promise((r) => setTimeout(r, proxy.webSocketDelayMs)));
    if (waits.length > 0) {
      held++;
      await Promise.all(waits);
      held--;
    }
    if (client.destroyed) return;
    const upstream = o.tls
      ? tlsConnect({ host: targetHost, port: o.targetPort, rejectUnauthorized: false })
      : netConnect({ host: targetHost, port: o.targetPort });
    track(upstream);
    let connected = false;
    upstream.on('connect', () => (connected = true));
    upstream.on('secureConnect', () => (connected = true));
    upstream.on('error', () => {
      if (connected || !proxy.badGatewayWhenDown) return client.destroy();
      badGateways++;
      const body = 'Bad Gateway';
      client.end(`HTTP/1.1 502 Bad Gateway\r\ncontent-type: text/plain\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n${body}`);
    });
    client.on('error', () => upstream.destroy());
    upstream.on('close', () => {
      if (connected || !proxy.badGatewayWhenDown) client.destroy();
    });
    client.on('close', () => upstream.destroy());
    upstream.write(head);
    upstream.pipe(client);
    client.pipe(upstream);
    client.resume();
  }

  const server: Server = o.tls
    ? createTlsServer({ cert: o.tls.cert, key: o.tls.key }, onConnection)
    : createNetServer(onConnection);
  server.on('error', () => undefined);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));

  const proxy: DelayProxy = {
    port: (server.address() as { port: number }).port,
    webSocketDelayMs: 0,
    badGatewayWhenDown: false,
    get badGateways() {
      return badGateways;
    },
    holdWebSockets: () => hold('webSocket'),
    holdAll: () => hold('all'),
    get webSocketsSeen() {
      return seen;
    },
    get held() {
      return held;
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return proxy;
}
