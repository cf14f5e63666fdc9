/**
 * One keep-alive HTTP/1.1 connection on a raw socket to a loopback server, one request in flight at a time,
 * for the closed-loop load generators (bench/lib/load/load.ts, bench/lib/load/multi-load.ts). It only understands what
 * the servers measured here send (bench/lib/load/http-answer-reader.ts), which keeps the generator's own cost per
 * request several times below node:http's client: on two cores the generator shares the machine with the
 * server and must not be what is measured.
 */
import { connect, type Socket } from 'node:net';
import { AnswerReader, type HttpAnswer } from './http-answer-reader.js';

/** A connection `open` made; a failure (error, close, unreadable answer) rejects the request in flight and every later one. */
export class KeepAliveConnection {
  private readonly reader = new AnswerReader();
  private waiter: { resolve: (answer: HttpAnswer) => void; reject: (err: Error) => void } | undefined;
  private failure: Error | undefined;

  private constructor(private readonly socket: Socket) {
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('error', (err) => this.fail(err));
    socket.on('close', () => this.fail(new Error('connection closed by server')));
  }

  /** Connects to 127.0.0.1:`port`; rejects if the connection cannot be made. */
  static open(port: number): Promise<KeepAliveConnection> {
    return new Promise((resolve, reject) => {
      const socket = connect({ host: '127.0.0.1', port });
      socket.once('connect', () => {
        socket.off('error', reject);
        resolve(new KeepAliveConnection(socket));
      });
      socket.once('error', reject);
    });
  }

  /** Sends one request (its whole bytes) and resolves with its answer, fully read; rejects once the connection failed. */
  send(bytes: Buffer): Promise<HttpAnswer> {
    if (this.failure) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => {
      this.waiter = { resolve, reject };
      this.socket.write(bytes);
    });
  }

  close(): void {
    this.socket.destroy();
  }

  private fail(err: Error): void {
    this.failure ??= err;
    const waiter = this.waiter;
    this.waiter = undefined;
    waiter?.reject(err);
  }

  private onData(chunk: Buffer): void {
    let answer: HttpAnswer | undefined;
    try {
      answer = this.reader.read(chunk);
    } catch (err) {
      this.fail(err as Error);
      this.socket.destroy();
      return;
    }
    if (!answer) return;
    const waiter = this.waiter;
    this.waiter = undefined;
    waiter?.resolve(answer);
  }
}
