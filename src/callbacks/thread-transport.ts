import type { KeyObject } from 'node:crypto';
import type { Worker } from 'node:worker_threads';
import { startThread } from '../worker-thread.js';
import type { AttemptAnswer, AttemptRequest, CallbackTransport, ConnectLookup, ConnectionOptions } from './attempt.js';
import { LocalTransport } from './local-transport.js';

/** What the delivery thread is started with. */
export interface ThreadData extends ConnectionOptions {
  /** The service's Ed25519 key (a KeyObject, cloned into the thread). */
  key: KeyObject;
}
type LookupEntry = { address: string; family: number };
/** Messages to the thread: attempts to send, and the answers to the lookups it asked for. */
export type ToThread =
  | { kind: 'attempts'; attempts: Array<AttemptRequest & { seq: number }> }
  | { kind: 'lookup'; seq: number; addresses: LookupEntry[] }
  | { kind: 'lookup'; seq: number; error: { message: string; code: string | undefined } };
/** Messages from the thread: what came of attempts, and the addresses it needs for a connection. */
export type FromThread = { kind: 'answers'; answers: Array<{ seq: number; answer: AttemptAnswer }> } | { kind: 'lookup'; seq: number; hostname: string };

/** After this many threads in a row failed without answering, attempts are sent from the event loop for good. */
const MAX_FAILURES = 3;
/** What an attempt the thread held when it failed comes to: nobody knows whether the backend got it; it is retried. */
const INTERRUPTED: AttemptAnswer = { failure: 'interrupted' };

/**
 * Attempts sent from a thread of their own (config `callbackDeliveryThread`, on by default): the
 * thread signs each attempt and POSTs it through its own agent, so the event loop keeps only the
 * store's writes and the bookkeeping of each callback (docs/backend.md "Delivery thread"). Attempts
 * asked for during one turn of the event loop go as one message, and the thread answers in batches.
 * The lookup of every connection the thread makes is done here, with `lookup` (the connect-time check).
 *
 * The thread starts with the first attempt and holds the process open only while attempts are owed.
 * If it fails, the attempts it held come back as `interrupted` (retried with backoff, at least once
 * as always) and the next attempt starts a new thread; after MAX_FAILURES in a row, and after
 * `close`, attempts are sent from the event loop (LocalTransport).
 */
export class ThreadTransport implements CallbackTransport {
  private worker: Worker | undefined;
  private readonly owed = new Map<number, (answer: AttemptAnswer) => void>();
  /** Attempts asked for in this turn of the loop, sent together at its end. */
  private outgoing: Array<AttemptRequest & { seq: number }> = [];
  private flushing = false;
  private nextSeq = 0;
  private failures = 0;
  private local: LocalTransport | undefined;
  private onLocal = false;

  constructor(
    private readonly key: KeyObject,
    private readonly lookup: ConnectLookup,
    private readonly o: ConnectionOptions,
  ) {}

  send(request: AttemptRequest): Promise<AttemptAnswer> {
    const worker = this.onLocal ? undefined : this.thread();
    if (worker === undefined) return this.fallback().send(request);
    return new Promise((resolve) => {
      const seq = this.nextSeq++;
      if (this.owed.size === 0) worker.ref();
      this.owed.set(seq, resolve);
      this.outgoing.push({ ...request, seq });
      if (!this.flushing) {
        this.flushing = true;
        setImmediate(() => this.flush());
      }
    });
  }

  async close(): Promise<void> {
    this.onLocal = true;
    const worker = this.worker;
    this.worker = undefined;
    this.outgoing = [];
    this.answerOwed(INTERRUPTED);
    await worker?.terminate();
    await this.local?.close();
  }

  private flush(): void {
    this.flushing = false;
    const attempts = this.outgoing;
    this.outgoing = [];
    // Without a thread, these were answered `interrupted` when it failed (or at close).
    if (attempts.length > 0) this.worker?.postMessage({ kind: 'attempts', attempts } satisfies ToThread);
  }

  private answered(answers: Extract<FromThread, { kind: 'answers' }>['answers'], worker: Worker): void {
    this.failures = 0;
    for (const { seq, answer } of answers) {
      const resolve = this.owed.get(seq);
      if (resolve === undefined) continue;
      this.owed.delete(seq);
      resolve(answer);
    }
    if (this.owed.size === 0) worker.unref();
  }

  /** Looks up a host the thread is connecting to, and sends it the outcome. */
  private lookUp(seq: number, hostname: string, worker: Worker): void {
    this.lookup(hostname, { all: true }, (err, addresses) => {
      if (this.worker !== worker) return;
      const message: ToThread = err
        ? { kind: 'lookup', seq, error: { message: err.message, code: err.code } }
        : { kind: 'lookup', seq, addresses: addresses as LookupEntry[] };
      worker.postMessage(message);
    });
  }

  /** The delivery thread, started with the first attempt; undefined when it cannot even start. */
  private thread(): Worker | undefined {
    if (this.worker) return this.worker;
    let worker: Worker;
    try {
      worker = startThread(import.meta.url, 'delivery-thread', { key: this.key, ...this.o } satisfies ThreadData);
    } catch {
      this.threadFailed();
      return undefined;
    }
    worker.unref();
    worker.on('message', (message: FromThread) => {
      if (this.worker !== worker) return;
      if (message.kind === 'answers') this.answered(message.answers, worker);
      else this.lookUp(message.seq, message.hostname, worker);
    });
    const failed = (): void => {
      if (this.worker !== worker) return;
      this.worker = undefined;
      this.outgoing = [];
      this.answerOwed(INTERRUPTED);
      this.threadFailed();
    };
    worker.on('error', failed);
    worker.on('exit', failed);
    this.worker = worker;
    return worker;
  }

  private threadFailed(): void {
    if (++this.failures >= MAX_FAILURES) this.onLocal = true;
  }

  private answerOwed(answer: AttemptAnswer): void {
    const owed = [...this.owed.values()];
    this.owed.clear();
    for (const resolve of owed) resolve(answer);
  }

  private fallback(): LocalTransport {
    return (this.local ??= new LocalTransport(this.key, this.lookup, this.o));
  }
}
