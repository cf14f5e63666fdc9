import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';

/**
 * A tiny load balancer on loopback, as an operator's plain balancer is one: no sticky sessions. Every
 * HTTP request goes to the next target in turn, on a new upstream connection (so a client's kept-alive
 * connection does not pin it to a node); a WebSocket upgrade is piped whole to the target it picked. A
 * target that refuses the connection (a killed node) is skipped, as a balancer's health check would.
 * Only for tests: no timeouts, no header rewriting beyond what HTTP needs.
 */
export class Balancer {
  /** Each request and upgrade a target answered (target by index), in order: a test can show how traffic was spread. */
  readonly log: { path: string; target: number }[] = [];
  /** HTTP requests a target failed without an answer (the connection reset or broken), when and how: the client got none either. */
  readonly failed: { path: string; target: number; code: string | undefined; at: number }[] = [];
  private next = 0;
  private readonly sockets = new Set<Socket | Duplex>();

  private constructor(
    private readonly server: Server,
    /** `host:port` of each target. */
    private targets: string[],
    /** Picks the target of a request itself (undefined: the next in turn). */
    private readonly route?: (path: string) => number | undefined,
  ) {}

  static async start(targets: string[] = [], o: { route?: (path: string) => number | undefined } = {}): Promise<Balancer> {
    let balancer!: Balancer;
    const server = createServer((req, res) => void balancer.forward(req, res));
    balancer = new Balancer(server, targets, o.route);
    // Client connections stay open until the client closes them: with Node's 5 s keep-alive timeout, a fetch in
    // a busy test process could reuse a connection in the moment the balancer closed it and fail unanswered.
    server.keepAliveTimeout = 0;
    server.on('upgrade', (req, socket, head) => balancer.upgrade(req, socket, head));
    server.on('connection', (socket) => balancer.track(socket));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return balancer;
  }

  get port(): number {
    return (this.server.address() as { port: number }).port;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Sets the targets (the nodes start after the balancer when they name its URL as their publicBaseUrl). */
  setTargets(targets: string[]): void {
    this.targets = targets;
  }

  /** Target indexes to try for one request: the chosen one first, then the others in turn. */
  private order(path: string): number[] {
    const n = this.targets.length;
    const first = this.route?.(path) ?? this.next++ % n;
    return Array.from({ length: n }, (_, k) => (first + k) % n);
  }

  private async forward(req: IncomingMessage, res: ServerResponse): Promise<void> {
    // Bodies here are small; buffered so a refused connection can be retried on the next target.
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    for (const index of this.order(req.url ?? '/')) {
      const [host, port] = this.targets[index]!.split(':') as [string, string];
      const outcome = await new Promise<'done' | 'refused'>((resolve) => {
        const upstream = httpRequest({ host, port: Number(port), method: req.method, path: req.url, headers: req.headers, agent: false }, (answer) => {
          this.log.push({ path: req.url ?? '/', target: index });
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
          answer.on('end', () => resolve('done'));
          answer.on('error', () => resolve('done'));
        });
        upstream.on('error', (err: NodeJS.ErrnoException) => {
          if (err.code === 'ECONNREFUSED' && !res.headersSent) return resolve('refused');
          this.failed.push({ path: req.url ?? '/', target: index, code: err.code, at: Date.now() });
          res.destroy();
          resolve('done');
        });
        // The client went away (an aborted long-poll): the node must see it go too.
        res.on('close', () => {
          if (!res.writableFinished) upstream.destroy();
        });
        upstream.end(body);
      });
      if (outcome === 'done') return;
    }
    res.writeHead(502, { 'content-type': 'text/plain' }).end('no target answered');
  }

  private upgrade(req: IncomingMessage, client: Duplex, head: Buffer): void {
    this.track(client);
    const tryTarget = (candidates: number[]): void => {
      const index = candidates[0];
      if (index === undefined) {
        client.end('HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n');
        return;
      }
      const [host, port] = this.targets[index]!.split(':') as [string, string];
      const upstream = connect(Number(port), host);
      this.track(upstream);
      let connected = false;
      upstream.once('connect', () => {
        connected = true;
        this.log.push({ path: req.url ?? '/', target: index });
        const lines = [`${req.method} ${req.url} HTTP/1.1`];
        for (let i = 0; i < req.rawHeaders.length; i += 2) lines.push(`${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}`);
        upstream.write(`${lines.join('\r\n')}\r\n\r\n`);
        if (head.length > 0) upstream.write(head);
        upstream.pipe(client);
        client.pipe(upstream);
      });
      upstream.on('error', () => {
        if (!connected) return tryTarget(candidates.slice(1));
        client.destroy();
      });
      upstream.on('close', () => {
        if (connected) client.destroy();
      });
      client.on('error', () => upstream.destroy());
      client.on('close', () => upstream.destroy());
    };
    tryTarget(this.order(req.url ?? '/'));
  }

  private track(socket: Socket | Duplex): void {
    this.sockets.add(socket);
    socket.once('close', () => this.sockets.delete(socket));
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
