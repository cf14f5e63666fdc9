import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { get } from '../helpers/http.js';
import { startService, type TestService } from '../helpers/service.js';

/** A raw client that writes `head` and then one more `drip` every 200 ms until the server closes the socket. */
function dribble(service: TestService, head: string, drip: string) {
  const { port } = new URL(service.baseUrl);
  const socket: Socket = connect(Number(port), '127.0.0.1');
  let received = '';
  socket.on('data', (chunk) => (received += chunk.toString('latin1')));
  socket.on('error', () => undefined);
  const started = Date.now();
  socket.write(head);
  const timer = setInterval(() => {
    if (!socket.destroyed && socket.writable) socket.write(drip);
  }, 200);
  const closed = new Promise<{ afterMs: number; received: string }>((resolve) =>
    socket.on('close', () => {
      clearInterval(timer);
      resolve({ afterMs: Date.now() - started, received });
    }),
  );
  return { socket, closed, stop: () => (clearInterval(timer), socket.destroy()) };
}

async function healthyWhile(service: TestService, until: Promise<unknown>): Promise<number> {
  let done = false;
  void until.then(() => (done = true));
  let answered = 0;
  while (!done) {
    expect((await get(service, '/healthz')).status).toBe(200);
    answered++;
    await Promise.race([until, new Promise((r) => setTimeout(r, 250))]);
  }
  return answered;
}

async function metric(service: TestService, line: string): Promise<number> {
  const text = (await get(service, '/metrics')).body.toString() as string;
  const found = text.split('\n').find((l) => l.startsWith(`${line} `));
  return found === undefined ? 0 : Number(found.slice(line.length + 1));
}

// Generous bound for a 2 s timeout: the point is "cut off", not how fast this machine is.
const CUT_WITHIN_MS = 15_000;

describe('slow clients (a body dribbled slowly was never timed out)', () => {
  let service: TestService;
  let cleanup: (() => void) | undefined;
  afterEach(async () => {
    cleanup?.();
    await service.close();
  });

  it('a slow body is cut off with 408 after requestTimeoutSeconds while /healthz keeps answering', async () => {
    service = await startService({ requestTimeoutSeconds: 2, headersTimeoutSeconds: 2 });
    const head =
      'POST /Agent/Account/Login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 10000\r\n\r\n{"userName":"';
    const client = dribble(service, head, 'a');
    cleanup = client.stop;
    const answered = await healthyWhile(service, client.closed);
    const { afterMs, received } = await client.closed;
    expect(afterMs).toBeLessThan(CUT_WITHIN_MS);
    expect(received).toMatch(/^HTTP\/1\.1 408 /);
    expect(answered).toBeGreaterThan(0);
    expect(await metric(service, 'tabwire_request_timeouts_total')).toBe(1);
  });

  it('a held long-poll is not a slow request: it outlives a shorter requestTimeoutSeconds', async () => {
    service = await startService({ requestTimeoutSeconds: 1, headersTimeoutSeconds: 1, longPollHoldSeconds: 3 });
    const poll = (cookie?: string) =>
      fetch(`${service.baseUrl}/ClientEvents`, {
        method: 'POST',
        headers: { 'content-type': 'text/plain', 'x-tabid': 'slow-clients-tab', ...(cookie ? { cookie } : {}) },
        body: 'http://127.0.0.1/page',
      });
    const first = await poll();
    await first.arrayBuffer();
    const held = await poll(first.headers.get('set-cookie')!.split(';')[0]!);
    expect(held.status).toBe(200);
    expect(await held.json()).toEqual([{ type: 'NOP' }]);
  });

  it('headers dribbled slowly are cut off after headersTimeoutSeconds', async () => {
    service = await startService({ requestTimeoutSeconds: 60, headersTimeoutSeconds: 2 });
    const client = dribble(service, 'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n', 'X-Slow: y\r\n');
    cleanup = client.stop;
    await healthyWhile(service, client.closed);
    const { afterMs } = await client.closed;
    expect(afterMs).toBeLessThan(CUT_WITHIN_MS);
  });
});
