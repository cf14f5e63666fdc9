import { createServer, type Server } from 'node:https';
import type { IncomingHttpHeaders } from 'node:http';

export interface ReceivedCallback {
  headers: IncomingHttpHeaders;
  body: string;
  url: string;
}

/** A backend's callback endpoint: real HTTPS on loopback, answering as the test says. */
export class CallbackReceiver {
  readonly received: ReceivedCallback[] = [];
  /** Status (and headers) for each request in turn; the last one repeats. */
  answers: Array<{ status: number; headers?: Record<string, string> }> = [{ status: 200 }];
  private server!: Server;
  port = 0;

  static async start(tls: { cert: Buffer; key: Buffer }): Promise<CallbackReceiver> {
    const receiver = new CallbackReceiver();
    receiver.server = createServer({ cert: tls.cert, key: tls.key }, (req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        receiver.received.push({ headers: req.headers, body, url: req.url ?? '' });
        const answer = receiver.answers[Math.min(receiver.received.length - 1, receiver.answers.length - 1)]!;
        res.writeHead(answer.status, answer.headers ?? {});
        res.end('ok');
      });
    });
    await new Promise<void>((resolve) => receiver.server.listen(0, '127.0.0.1', resolve));
    receiver.port = (receiver.server.address() as { port: number }).port;
    return receiver;
  }

  get url(): string {
    return `https://127.0.0.1:${this.port}/tabwire-callback`;
  }

  /** Waits until `count` requests arrived. */
  async waitFor(count: number, ms = 10_000): Promise<void> {
    const deadline = Date.now() + ms;
    while (this.received.length < count) {
      if (Date.now() > deadline) throw new Error(`receiver got ${this.received.length} of ${count} callbacks`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
