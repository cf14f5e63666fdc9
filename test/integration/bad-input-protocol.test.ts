import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALLOWED_ORIGIN, expectProblem, startBadInputService } from '../helpers/bad-input.js';
import { get, post } from '../helpers/http.js';
import type { TestService } from '../helpers/service.js';

// Inputs a hostile client sends on the wire (HTTP framing, CORS preflights, WebSocket handshakes, Upgrade
// headers): each was once a 500, a text/html or text/plain answer, or a misrouted request. (In the fields of a
// request body: bad-input-fields.test.ts.)
let service: TestService;

beforeAll(async () => {
  ({ service } = await startBadInputService());
});
afterAll(async () => service.close());

interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  contentType: string;
  body: any;
}

/**
 * Sends bytes fetch would never send, on a plain socket, and reads one response: up to the end of its
 * Content-Length, or to the close of the connection.
 */
function raw(request: string): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = connect(Number(new URL(service.baseUrl).port), '127.0.0.1', () => socket.write(request));
    let data = Buffer.alloc(0);
    const finish = () => {
      const text = data.toString('latin1');
      const end = text.indexOf('\r\n\r\n');
      if (end === -1) return reject(new Error(`no response: ${JSON.stringify(text)}`));
      const [statusLine, ...fields] = text.slice(0, end).split('\r\n');
      const headers: Record<string, string> = {};
      for (const field of fields) headers[field.slice(0, field.indexOf(':')).toLowerCase()] = field.slice(field.indexOf(':') + 1).trim();
      const bodyText = data.subarray(end + 4).toString('utf8');
      const contentType = headers['content-type'] ?? '';
      resolve({ status: Number(statusLine!.split(' ')[1]), headers, contentType, body: contentType.includes('json') ? JSON.parse(bodyText) : bodyText });
    };
    socket.on('data', (chunk: Buffer) => {
      data = Buffer.concat([data, chunk]);
      const text = data.toString('latin1');
      const end = text.indexOf('\r\n\r\n');
      const length = /\r\ncontent-length: *(\d+)/i.exec(text.slice(0, end))?.[1];
      if (end !== -1 && length !== undefined && data.length >= end + 4 + Number(length)) {
        socket.destroy();
        finish();
      }
    });
    socket.on('close', finish);
    socket.on('error', () => undefined);
  });
}

describe('framework errors are problem+json', () => {
  it('a header section over the limit answered Fastify JSON 431', async () => {
    const answer = await raw(`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    expectProblem(answer, 431, 'header_too_large');
    expect(answer.headers['x-content-type-options']).toBe('nosniff');
  });

  it('a request Node cannot parse answered Fastify JSON 400', async () => {
    expectProblem(await raw('GET /healthz HTTP/1.1\r\nHo st: x\r\n\r\n'), 400, 'request_malformed');
    expectProblem(await raw('BREW /healthz HTCPCP/1.0\r\n\r\n'), 400, 'request_malformed');
  });

  it('an HTTP/1.1 request without Host answered Node\'s empty 400', async () => {
    expectProblem(await raw('GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n'), 400, 'request_malformed');
    expect((await raw('GET /healthz HTTP/1.0\r\n\r\n')).status).toBe(200);
  });

  it('an Expect other than 100-continue answered Node\'s empty 417', async () => {
    expectProblem(await raw('GET /healthz HTTP/1.1\r\nHost: x\r\nExpect: tea\r\nConnection: close\r\n\r\n'), 417, 'expectation_failed');
  });

  it('CONNECT was dropped without an answer', async () => {
    const answer = await raw('CONNECT internal.example:443 HTTP/1.1\r\nHost: internal.example:443\r\n\r\n');
    expectProblem(answer, 405, 'method_not_allowed');
  });

  it('a path with bad percent-encoding (/QuickLogin/Sign/%zz) answered FST_ERR_BAD_URL JSON', async () => {
    const answer = await raw('GET /QuickLogin/Sign/%zz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    expectProblem(answer, 400, 'url_malformed');
  });

  it('a path parameter over maxParamLength answered FST_ERR_MAX_PARAM_LENGTH JSON 414', async () => {
    const answer = await get(service, `/QuickLogin/Sign/${'a'.repeat(500)}`);
    expectProblem(answer, 414, 'uri_too_long');
  });
});

describe('CORS preflight refusals are problem+json', () => {
  const preflight = (origin: string, method?: string) =>
    raw(
      `OPTIONS /QuickLogin HTTP/1.1\r\nHost: x\r\nOrigin: ${origin}\r\n` +
        (method === undefined ? '' : `Access-Control-Request-Method: ${method}\r\n`) +
        'Connection: close\r\n\r\n',
    );

  it('a preflight from a disallowed origin answered 404 "OPTIONS … does not exist"', async () => {
    const answer = await preflight('https://evil.example', 'POST');
    expectProblem(answer, 403, 'cors_origin_not_allowed');
    expect(answer.headers['access-control-allow-origin']).toBeUndefined();
  });

  it('a preflight without Access-Control-Request-Method answered text/plain "Invalid Preflight Request"', async () => {
    expectProblem(await preflight(ALLOWED_ORIGIN), 400, 'preflight_invalid');
  });

  it('a preflight with an empty Access-Control-Request-Method answered text/plain (found by the fuzz suite)', async () => {
    expectProblem(await preflight(ALLOWED_ORIGIN, ''), 400, 'preflight_invalid');
  });

  it('a preflight from the allowed origin still gets CORS, for that origin only', async () => {
    const answer = await preflight(ALLOWED_ORIGIN, 'POST');
    expect(answer.status).toBe(204);
    expect(answer.headers['access-control-allow-origin']).toBe(ALLOWED_ORIGIN);
    expect(answer.headers['access-control-allow-credentials']).toBe('true');
  });
});

describe('WebSocket handshake refusals are problem+json, not ws text/html', () => {
  const handshake = (o: { method?: string; key?: string; version?: string | null; protocol?: string }) =>
    raw(
      `${o.method ?? 'GET'} /ClientEventsWS HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n` +
        `Sec-WebSocket-Key: ${o.key ?? 'dGhlIHNhbXBsZSBub25jZQ=='}\r\n` +
        (o.version === null ? '' : `Sec-WebSocket-Version: ${o.version ?? '13'}\r\n`) +
        `Sec-WebSocket-Protocol: ${o.protocol ?? 'ls'}\r\n\r\n`,
    );

  it('a bad Sec-WebSocket-Key answered text/html 400', async () => {
    expectProblem(await handshake({ key: 'not-a-key' }), 400, 'websocket_handshake_invalid');
  });

  it('an unsupported version answered text/html 400; RFC 6455 §4.4 wants 426 naming version 13', async () => {
    const answer = await handshake({ version: '12' });
    expectProblem(answer, 426, 'websocket_version_unsupported');
    expect(answer.headers['sec-websocket-version']).toBe('13');
    const missing = await handshake({ version: null });
    expectProblem(missing, 400, 'websocket_handshake_invalid');
    expect(missing.headers['sec-websocket-version']).toBe('13');
  });

  it('a handshake with another method answered text/html 405', async () => {
    const answer = await handshake({ method: 'POST' });
    expectProblem(answer, 405, 'method_not_allowed');
    expect(answer.headers.allow).toBe('GET');
  });

  it('a Sec-WebSocket-Protocol ws cannot parse answered text/html 400', async () => {
    expectProblem(await handshake({ protocol: 'ls, @@' }), 400, 'websocket_handshake_invalid');
  });

  it('a valid handshake is still accepted', async () => {
    const answer = await new Promise<string>((resolve) => {
      const socket = connect(Number(new URL(service.baseUrl).port), '127.0.0.1', () =>
        socket.write(
          'GET /ClientEventsWS HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n' +
            'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: ls\r\n\r\n',
        ),
      );
      socket.once('data', (chunk: Buffer) => {
        socket.destroy();
        resolve(chunk.toString('latin1'));
      });
    });
    expect(answer).toMatch(/^HTTP\/1\.1 101 /);
  });
});

describe('an Upgrade header elsewhere is ignored (RFC 9110 §7.8)', () => {
  it('curl --http2 (Upgrade: h2c) on /healthz answered 404 "No WebSocket endpoint"', async () => {
    const answer = await raw(
      'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n',
    );
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ status: 'ok' });
  });

  it('a POST with an Upgrade header keeps its body', async () => {
    const body = JSON.stringify({ userName: 'ada', password: 'analytical engine', seconds: 60 });
    const answer = await raw(
      `POST /Agent/Account/Login HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, close\r\nUpgrade: h2c\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    expect(answer.status).toBe(200);
    expect(typeof answer.body.jwt).toBe('string');
  });

  it('Upgrade: websocket on another path is served as plain HTTP; h2c on the event channel gets its 426', async () => {
    const healthz = await raw('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, close\r\nUpgrade: websocket\r\n\r\n');
    expect(healthz.status).toBe(200);
    expectProblem(await raw('GET /ClientEventsWS HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, close\r\nUpgrade: h2c\r\n\r\n'), 426, 'websocket_required');
  });
});

describe('X-Content-Type-Options: nosniff', () => {
  it('JSON answers and problems were sniffable', async () => {
    for (const answer of [await get(service, '/healthz'), await get(service, '/.well-known/jwks.json'), await get(service, '/no/such/thing')]) {
      expect(answer.headers.get('x-content-type-options')).toBe('nosniff');
    }
    const refused = await post(service, '/Agent/Account/Login', { userName: 'ada' });
    expect(refused.status).toBe(400);
    expect(refused.headers.get('x-content-type-options')).toBe('nosniff');
  });
});
