import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { get } from '../helpers/http.js';
import { startService, type TestService } from '../helpers/service.js';

const TAB = 'shutdown-tab-1';

function poll(service: TestService, cookie?: string) {
  return fetch(`${service.baseUrl}/ClientEvents`, {
    method: 'POST',
    headers: { 'content-type': 'text/plain', 'x-tabid': TAB, ...(cookie ? { cookie } : {}) },
    body: 'http://127.0.0.1/page',
  });
}

async function until(condition: () => boolean, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * A raw HTTP/1.1 client: writes `head` and resolves `continued` once Node answered its
 * `Expect: 100-continue` (it has parsed the headers and handed the request on); `closed` resolves with
 * everything received when the server closes the connection.
 */
function rawRequest(service: TestService, head: string) {
  const socket = connect(Number(new URL(service.baseUrl).port), '127.0.0.1');
  socket.on('error', () => undefined);
  let received = '';
  let onContinue: () => void;
  const continued = new Promise<void>((resolve) => (onContinue = resolve));
  socket.on('data', (chunk) => {
    received += chunk.toString('latin1');
    if (received.startsWith('HTTP/1.1 100 Continue')) onContinue();
  });
  const closed = new Promise<string>((resolve) => socket.on('close', () => resolve(received)));
  socket.write(head);
  return { socket, continued, closed };
}

describe('shutdown (a held long-poll kept shutdown waiting for up to 20 s)', () => {
  it('answers a held long-poll at once with 200 [] and closes idle keep-alive connections', async () => {
    const service = await startService({ longPollHoldSeconds: 30 });
    // The first poll of a new session is answered at once with its cookie; the next one is held.
    const first = await poll(service);
    const cookie = first.headers.get('set-cookie')!.split(';')[0]!;
    await first.arrayBuffer();
    const held = poll(service, cookie);
    await until(() => service.app.tabwire.hub.snapshot().connected === 1);
    // An idle keep-alive connection (fetch keeps it open) must not hold shutdown either.
    expect((await get(service, '/healthz')).status).toBe(200);

    const started = Date.now();
    const closing = service.close();
    const answer = await held;
    expect(answer.status).toBe(200);
    expect(await answer.json()).toEqual([]);
    expect(answer.headers.get('connection')).toBe('close');
    await closing;
    // The hold was 30 s: finishing well under it proves shutdown did not wait for the poll.
    expect(Date.now() - started).toBeLessThan(15_000);
  });

  it('a request that finishes during shutdown closes its keep-alive connection, so shutdown does not wait for the deadline', async () => {
    const service = await startService({ longPollHoldSeconds: 30, shutdownTimeoutSeconds: 60 });
    const first = await poll(service);
    const cookie = first.headers.get('set-cookie')!.split(';')[0]!;
    await first.arrayBuffer();
    const held = poll(service, cookie);
    await until(() => service.app.tabwire.hub.snapshot().connected === 1);

    // A keep-alive request in progress: headers read, body still coming.
    const body = JSON.stringify({ userName: 'nobody', password: 'wrong password', seconds: 60 });
    const request = rawRequest(service, `POST /Agent/Account/Login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nExpect: 100-continue\r\n\r\n`);
    await request.continued;

    const started = Date.now();
    const closing = service.close();
    // The held poll's answer shows shutdown has begun; now the request completes.
    expect((await held).status).toBe(200);
    request.socket.write(body);
    const response = await request.closed;
    expect(response).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 401 /);
    expect(response.toLowerCase()).toContain('connection: close');
    await closing;
    expect(Date.now() - started).toBeLessThan(30_000);
  });

  it('cuts a request still in progress at shutdownTimeoutSeconds', async () => {
    const service = await startService({ shutdownTimeoutSeconds: 1, requestTimeoutSeconds: 120, headersTimeoutSeconds: 60 });
    // Headers and part of a body: a request in progress that would take 120 s to time out.
    const request = rawRequest(service, 'POST /Agent/Account/Login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\nExpect: 100-continue\r\n\r\n');
    await request.continued;
    request.socket.write('{"u');

    const started = Date.now();
    await service.close();
    await request.closed;
    expect(Date.now() - started).toBeLessThan(15_000);
  });
});
