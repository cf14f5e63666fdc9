import { request as httpRequest } from 'node:http';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROTOCOL_VERSION, PROTOCOL_VERSION_HEADER } from '../../src/protocol/version.js';
import { get, post } from '../helpers/http.js';
import { startService, type TestService } from '../helpers/service.js';

/** docs/protocol.md "Versioning": every answer names the wire protocol version in one header. */
const PAGE_ORIGIN = 'https://shop.example';
const HEADER = PROTOCOL_VERSION_HEADER.toLowerCase();
const EXPECTED = String(PROTOCOL_VERSION);

let service: TestService;
beforeAll(async () => {
  service = await startService({ allowedOrigins: [PAGE_ORIGIN] });
});
afterAll(async () => service.close());

/** The status and headers of a raw HTTP/1.1 exchange (for answers written before any route runs). */
function rawAnswer(path: string, headers: Record<string, string>): Promise<{ status: number; headers: Record<string, string | string[] | undefined> }> {
  const url = new URL(service.baseUrl);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: url.hostname, port: url.port, path, headers }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers }));
    });
    req.on('upgrade', (res, socket) => {
      socket.destroy();
      resolve({ status: res.statusCode ?? 0, headers: res.headers });
    });
    req.on('error', reject);
    req.end();
  });
}

describe('the protocol version header', () => {
  it('is on a successful JSON answer, a script and a problem+json refusal', async () => {
    expect(PROTOCOL_VERSION).toBe(1);
    const health = await get(service, '/healthz');
    expect(health.status).toBe(200);
    expect(health.headers.get(HEADER)).toBe(EXPECTED);

    const script = await get(service, '/Events.js');
    expect(script.status).toBe(200);
    expect(script.headers.get(HEADER)).toBe(EXPECTED);

    // A QR request missing its required (possibly empty) fields is refused; the refusal carries it too.
    const refused = await post(service, '/QuickLogin', { mode: 'text', purpose: 'Log in' });
    expect(refused.status).toBe(400);
    expect(refused.contentType).toContain('application/problem+json');
    expect(refused.headers.get(HEADER)).toBe(EXPECTED);

    const unknown = await get(service, '/no-such-route');
    expect(unknown.status).toBe(404);
    expect(unknown.headers.get(HEADER)).toBe(EXPECTED);
  });

  it('is readable by an allowed cross-origin page (exposed through CORS)', async () => {
    const answer = await get(service, '/healthz', { origin: PAGE_ORIGIN });
    expect(answer.headers.get('access-control-allow-origin')).toBe(PAGE_ORIGIN);
    const exposed = (answer.headers.get('access-control-expose-headers') ?? '').split(',').map((h) => h.trim().toLowerCase());
    expect(exposed).toContain(HEADER);
  });

  it('is on the WebSocket 101 answer', async () => {
    const ws = new WebSocket(service.wsUrl, 'ls');
    const upgraded = await new Promise<string | string[] | undefined>((resolve, reject) => {
      ws.on('upgrade', (res) => resolve(res.headers[HEADER]));
      ws.on('error', reject);
    });
    ws.close();
    expect(upgraded).toBe(EXPECTED);
  });

  it('is on a WebSocket handshake refused before any route runs', async () => {
    const refused = await rawAnswer('/ClientEventsWS', {
      connection: 'Upgrade',
      upgrade: 'websocket',
      'sec-websocket-version': '13',
      'sec-websocket-key': Buffer.alloc(16, 7).toString('base64'),
      // No "ls" subprotocol: 400 subprotocol_required, written on the raw socket.
      'sec-websocket-protocol': 'chat',
    });
    expect(refused.status).toBe(400);
    expect(refused.headers[HEADER]).toBe(EXPECTED);
  });

  it('is on the answers Node gives by itself: an unsupported Expect (417) and oversized headers (431)', async () => {
    const expectation = await rawAnswer('/healthz', { expect: 'something-else' });
    expect(expectation.status).toBe(417);
    expect(expectation.headers[HEADER]).toBe(EXPECTED);
    const oversized = await rawAnswer('/healthz', { 'x-filler': 'a'.repeat(20 * 1024) });
    expect(oversized.status).toBe(431);
    expect(oversized.headers[HEADER]).toBe(EXPECTED);
  });
});
