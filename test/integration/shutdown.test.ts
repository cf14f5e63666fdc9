import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { WEBSOCKET_CLOSE_DEADLINE_MS } from '../../src/wiring/events.js';
import { get } from '../helpers/http.js';
import { assertFreshBuild } from '../helpers/process.js';
import { freePort, startService, type TestService } from '../helpers/service.js';
import { until as untilCondition } from '../helpers/until.js';

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

/** RFC 6455 §5.2: a client frame (FIN set, masked) with a payload under 126 bytes. */
function clientFrame(opcode: number, payload: Buffer): Buffer {
  const mask = randomBytes(4);
  const masked = Buffer.from(payload.map((byte, i) => byte ^ mask[i % 4]!));
  return Buffer.concat([Buffer.from([0x80 | opcode, 0x80 | payload.length]), mask, masked]);
}
const textFrame = (value: unknown) => clientFrame(0x1, Buffer.from(JSON.stringify(value)));
/** RFC 6455 §5.5.1: a close frame with status 1000. */
const closeFrame = () => clientFrame(0x8, Buffer.from([0x03, 0xe8]));

/**
 * A WebSocket peer on a raw socket that will never finish a TCP close: `allowHalfOpen`, so the server's FIN
 * is not answered with one of its own (as a peer whose network went away never answers). `received` is
 * everything the server sent. (Such a socket sees nothing when the server cuts it: it already had the FIN.)
 */
async function silentPeer(port: number) {
  const socket: Socket = connect({ port, host: '127.0.0.1', allowHalfOpen: true });
  socket.on('error', () => undefined);
  let received = '';
  socket.on('data', (chunk) => (received += chunk.toString('latin1')));
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  const key = randomBytes(16).toString('base64');
  socket.write(`GET /ClientEventsWS HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: ls\r\n\r\n`);
  await untilCondition(() => received.includes('\r\n\r\n'), 'the handshake answer');
  expect(received).toMatch(/^HTTP\/1\.1 101 /);
  return { socket, received: () => received };
}

describe('shutdown with a silent WebSocket peer (shutdown waited 25 s for it and exited 1)', () => {
  it('a peer that sent its close frame and then went silent is cut after the close deadline; the process exits 0 well within shutdownTimeoutSeconds, with no error logged', async () => {
    assertFreshBuild();
    const dir = mkdtempSync(join(tmpdir(), 'tabwire-shutdown-'));
    const port = await freePort();
    // shutdownTimeoutSeconds stays at its default (10 s); the process's own last resort comes 15 s after it.
    const env = { PATH: process.env.PATH, TABWIRE_PORT: String(port), TABWIRE_SQLITE_FILE: join(dir, 'db.sqlite'), TABWIRE_LOG_LEVEL: 'warn', TABWIRE_LOG_FORMAT: 'json' };
    const child = spawn(process.execPath, ['dist/main.js'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let log = '';
    child.stdout.on('data', (chunk: Buffer) => (log += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (log += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      await untilCondition(async () => (await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => undefined))?.ok === true, 'the service to start', 30_000);
      // A page leaving as the reference script does (Unregister, close 1000) whose network then goes away...
      const leaving = await silentPeer(port);
      leaving.socket.write(textFrame({ cmd: 'Register', tabId: 'silent-peer-tab', location: 'http://127.0.0.1/page' }));
      await untilCondition(() => leaving.received().includes('CheckServerInstance'), 'the registration greeting');
      leaving.socket.write(textFrame({ cmd: 'Unregister' }));
      leaving.socket.write(closeFrame());
      // ...and a socket that never registered, closed the same way.
      const bare = await silentPeer(port);
      bare.socket.write(closeFrame());
      // The server answered both close frames (RFC 6455 §5.5.1): the handshakes are waiting for the peers' FIN.
      await untilCondition(() => [leaving, bare].every((p) => p.received().includes('\x88\x02\x03\xe8')), 'the server’s close frames');

      const started = Date.now();
      child.kill('SIGTERM');
      // The HTTP server closes once every socket is gone, so the process can only exit once both were cut.
      const code = await exited;
      const took = Date.now() - started;
      console.info(`silent peers: SIGTERM to exit ${took} ms, exit code ${code}`);
      expect(code).toBe(0);
      // The deadline for requests is 10 s; a silent peer used to hold the process until the last resort (25 s).
      expect(took).toBeLessThan(10_000);
      expect(took).toBeGreaterThanOrEqual(WEBSOCKET_CLOSE_DEADLINE_MS);
      const errors = log.split('\n').filter((line) => line.startsWith('{') && (JSON.parse(line) as { level: number }).level >= 50);
      expect(errors).toEqual([]);
      for (const peer of [leaving, bare]) peer.socket.destroy();
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
