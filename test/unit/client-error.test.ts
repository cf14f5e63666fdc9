import { createServer, type Server } from 'node:http';
import { connect } from 'node:net';
import { Duplex } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { clientErrorHandler } from '../../src/http/client-error.js';

const fastify = { log: { debug: () => undefined } } as unknown as FastifyInstance;
const handler = clientErrorHandler.bind(fastify);
const error = (code: string) => Object.assign(new Error(code), { code });

/** A socket that records what is written to it. */
class RecordingSocket extends Duplex {
  written = '';
  _httpMessage: { headersSent: boolean } | null = null;
  override _read(): void {}
  override _write(chunk: Buffer, _encoding: BufferEncoding, done: () => void): void {
    this.written += chunk.toString('latin1');
    done();
  }
}

/** A socket whose writes reach the peer only on a later turn, unless it was destroyed first. */
class SlowSocket extends RecordingSocket {
  override _write(chunk: Buffer, _encoding: BufferEncoding, done: () => void): void {
    setImmediate(() => {
      if (!this.destroyed) this.written += chunk.toString('latin1');
      done();
    });
  }
}

let server: Server | undefined;
afterEach(async () => {
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  server = undefined;
});

describe('answers to requests Node refuses before Fastify sees them', () => {
  it('a request timeout written by the server was Fastify JSON, not problem+json', async () => {
    // Node itself times the request out (requestTimeout) and reports it through clientError.
    server = createServer({ requestTimeout: 100, headersTimeout: 100, connectionsCheckingInterval: 20 }, () => undefined);
    server.on('clientError', handler);
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    const answer = await new Promise<string>((resolve) => {
      const socket = connect(port, '127.0.0.1', () => socket.write('GET / HTTP/1.1\r\nHost: x\r\n'));
      let text = '';
      socket.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
      socket.on('close', () => resolve(text));
      socket.on('error', () => undefined);
    });
    expect(answer).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
    expect(answer).toMatch(/\r\nContent-Type: application\/problem\+json; charset=utf-8\r\n/);
    expect(answer).toMatch(/\r\nConnection: close\r\n/);
    expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4))).toMatchObject({ status: 408, code: 'request_timeout' });
  });

  it('maps parser errors to 431 and 400, and answers nothing to a peer that is gone', () => {
    for (const [code, status] of [['HPE_HEADER_OVERFLOW', '431'], ['HPE_INVALID_METHOD', '400'], ['HPE_INVALID_HEADER_TOKEN', '400']] as const) {
      const socket = new RecordingSocket();
      handler(error(code), socket);
      expect(socket.written.startsWith(`HTTP/1.1 ${status} `)).toBe(true);
    }
    const reset = new RecordingSocket();
    handler(error('ECONNRESET'), reset);
    expect(reset.written).toBe('');
    expect(reset.destroyed).toBe(true);
  });

  it('a second status line was written into a response already under way', () => {
    const socket = new RecordingSocket();
    socket._httpMessage = { headersSent: true };
    handler(error('HPE_INVALID_EOF_STATE'), socket);
    expect(socket.written).toBe('');
    expect(socket.destroyed).toBe(true);
  });

  it('a second parser complaint cut the connection before the first answer was flushed', async () => {
    const socket = new SlowSocket();
    handler(error('HPE_INVALID_METHOD'), socket);
    handler(error('HPE_INVALID_METHOD'), socket);
    await new Promise((resolve) => socket.on('close', resolve));
    expect(socket.written.match(/(^|\r\n)HTTP\/1\.1 \d{3} /g)).toHaveLength(1);
  });
});
