/**
 * The keep-alive HTTP/1.1 pool of raw sockets a waiting-people load process sends its tabs' requests
 * over. Shared by the process's tabs because one process may hold only ~20,000 open files (and so may
 * the server): the picture is a reverse proxy in front of the service keeping a pool of upstream
 * connections. Each request brings its own bytes, its tab's cookie included.
 */
import { connect, type Socket } from 'node:net';
import { AnswerReader, type HttpAnswer } from '../../lib/load/http-answer-reader.js';

/** Receives an answer: its status, its head (status line and headers) and its body. */
export type Answer = (status: number, head: string, body: Buffer) => void;

/** One request: its whole bytes, and what to do with the answer or with a failure. */
export interface Job {
  bytes: Buffer;
  answer: Answer;
  fail: (message: string) => void;
}

/**
 * One keep-alive HTTP/1.1 connection of the pool, one request at a time. It reads only what the
 * service sends here (Content-Length bodies); anything else fails the request and the connection.
 */
class PooledConnection {
  private readonly socket: Socket;
  private readonly reader = new AnswerReader();
  private job: Job | undefined;
  private dead = false;

  constructor(
    private readonly pool: Pool,
    port: number,
    localAddress: string | undefined,
  ) {
    this.socket = connect({ host: '127.0.0.1', port, ...(localAddress === undefined ? {} : { localAddress }) });
    this.socket.setNoDelay(true);
    this.socket.on('data', (chunk: Buffer) => this.onData(chunk));
    this.socket.on('error', () => undefined);
    this.socket.on('close', () => this.onClose());
  }

  send(job: Job): void {
    this.job = job;
    this.socket.write(job.bytes);
  }

  destroy(): void {
    this.dead = true;
    this.socket.destroy();
  }

  private onClose(): void {
    if (this.dead) return;
    this.dead = true;
    const job = this.job;
    this.job = undefined;
    job?.fail('connection closed by the server');
    this.pool.replace(this);
  }

  private onData(chunk: Buffer): void {
    let answer: HttpAnswer | undefined;
    try {
      answer = this.reader.read(chunk);
    } catch (err) {
      return this.broken((err as Error).message);
    }
    if (!answer) return;
    const job = this.job;
    this.job = undefined;
    this.pool.release(this);
    this.pool.answers++;
    job?.answer(answer.status, answer.head, answer.body);
  }

  private broken(why: string): void {
    const job = this.job;
    this.job = undefined;
    this.dead = true;
    this.socket.destroy();
    job?.fail(why);
    this.pool.replace(this);
  }
}

/** Keep-alive connections used in turn (FIFO, so none idles into the server's keep-alive timeout). */
export class Pool {
  /** HTTP answers received since `resetCounts` (a window's; 2 per refresh in image mode). */
  answers = 0;
  /** Longest queue of requests waiting for a connection since `resetCounts`. */
  maxQueue = 0;
  private idle: PooledConnection[] = [];
  private queue: Job[] = [];
  private head = 0;
  /** Set by `close`: a connection lost from then on is not replaced. */
  private closed = false;

  constructor(
    private readonly port: number,
    size: number,
    /** The loopback address the connections come from (the tabs' own, Setup.localAddress). */
    private readonly localAddress?: string,
  ) {
    for (let i = 0; i < size; i++) this.idle.push(new PooledConnection(this, port, localAddress));
  }

  /** Sends on an idle connection, or queues until one is free. */
  request(job: Job): void {
    const connection = this.idle.shift();
    if (connection) return connection.send(job);
    this.queue.push(job);
    this.maxQueue = Math.max(this.maxQueue, this.queue.length - this.head);
  }

  /** A connection is free again: the oldest queued request takes it, or it waits among the idle. */
  release(connection: PooledConnection): void {
    if (this.head < this.queue.length) {
      const job = this.queue[this.head]!;
      this.queue[this.head++] = undefined as unknown as Job;
      if (this.head > 1024 && this.head * 2 > this.queue.length) {
        this.queue = this.queue.slice(this.head);
        this.head = 0;
      }
      connection.send(job);
      return;
    }
    this.idle.push(connection);
  }

  /** A connection died: a new one takes its place, unless the pool is closed. */
  replace(dead: PooledConnection): void {
    this.idle = this.idle.filter((c) => c !== dead);
    if (!this.closed) this.release(new PooledConnection(this, this.port, this.localAddress));
  }

  /** Starts a window's counts (`answers`, `maxQueue`) from 0. */
  resetCounts(): void {
    this.answers = 0;
    this.maxQueue = 0;
  }

  /** The process exits: idle connections close, and none is replaced any more. */
  close(): void {
    this.closed = true;
    for (const c of this.idle) c.destroy();
  }
}
