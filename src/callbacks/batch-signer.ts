import { sign, type KeyObject } from 'node:crypto';
import { Worker } from 'node:worker_threads';

/**
 * The signing thread's program: a constant of this module, never anything received (run with
 * `eval: true`, so neither the TypeScript sources nor dist need a separate worker file). It signs a
 * message's contents one after the other with the key it was started with and answers with all the
 * signatures in one buffer, 64 bytes each, in order. workerData: { key } (a KeyObject, cloned).
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { sign } = require('node:crypto');
const key = workerData.key;
parentPort.on('message', ({ data, ends }) => {
  const bytes = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  const signatures = Buffer.allocUnsafeSlow(ends.length * 64);
  let start = 0;
  for (let i = 0; i < ends.length; i++) {
    sign(null, bytes.subarray(start, ends[i]), key).copy(signatures, i * 64);
    start = ends[i];
  }
  parentPort.postMessage(signatures, [signatures.buffer]);
});
`;

/** An Ed25519 signature is 64 bytes (RFC 8032). */
const SIGNATURE_BYTES = 64;
/** Contents sent to the thread in one message at most; the rest go in the next. */
const MAX_BATCH = 512;
/** Threads that fail one after the other without answering a batch before the thread pool takes over for good. */
const MAX_FAILURES = 3;

interface Waiting {
  content: Buffer;
  resolve: (signature: Buffer) => void;
  reject: (err: unknown) => void;
}

/** Ed25519 on libuv's thread pool, one job per signature: what the batch signer falls back to. */
export const signOnThreadPool = (content: Buffer, key: KeyObject): Promise<Buffer> =>
  new Promise((resolve, reject) => sign(null, content, key, (err, signature) => (err ? reject(err) : resolve(signature))));

/**
 * Ed25519 signatures made on a thread of their own, in batches. One batch is with the thread at a time
 * and whatever is asked for meanwhile goes in the next, so a lone signature goes at once and under load
 * the batches grow by themselves (~18 signatures a message at 15,000 callbacks/s). Per signature the
 * serving thread then copies the content and resolves a promise, instead of handing a job to libuv's
 * thread pool and taking its callback: ~10 µs less of the serving thread per callback under load
 * (docs/benchmarks.md#callback-delivery).
 *
 * If the thread fails, the signatures it held and those waiting are made on the thread pool, and the
 * next batch starts a new thread; after MAX_FAILURES threads in a row failed without answering, and
 * after `close`, every signature is made on the thread pool.
 */
export class BatchSigner {
  private worker: Worker | undefined;
  private waiting: Waiting[] = [];
  /** The batch the thread is signing; undefined while it is idle. */
  private sent: Waiting[] | undefined;
  private closed = false;
  /** Threads failed in a row without answering a batch. */
  private failures = 0;

  constructor(private readonly key: KeyObject) {}

  sign(content: Buffer): Promise<Buffer> {
    if (this.closed) return signOnThreadPool(content, this.key);
    return new Promise((resolve, reject) => {
      this.waiting.push({ content, resolve, reject });
      if (this.sent === undefined) this.send();
    });
  }

  /** Stops the thread; signatures still owed are made on the thread pool. */
  async close(): Promise<void> {
    this.closed = true;
    const worker = this.worker;
    this.worker = undefined;
    this.fallBack();
    await worker?.terminate();
  }

  /** Sends what waits (up to MAX_BATCH) to the idle thread, as one buffer of contents and their ends. */
  private send(): void {
    if (this.waiting.length === 0) return;
    const batch = this.waiting.length <= MAX_BATCH ? this.waiting : this.waiting.slice(0, MAX_BATCH);
    this.waiting = this.waiting.length <= MAX_BATCH ? [] : this.waiting.slice(MAX_BATCH);
    let length = 0;
    for (const w of batch) length += w.content.length;
    const data = Buffer.allocUnsafeSlow(length);
    const ends = new Uint32Array(batch.length);
    let end = 0;
    for (let i = 0; i < batch.length; i++) {
      end += batch[i]!.content.copy(data, end);
      ends[i] = end;
    }
    this.sent = batch;
    const worker = this.thread();
    // Keeps the process alive while signatures are owed (a script awaiting one must not exit first).
    worker.ref();
    worker.postMessage({ data, ends }, [data.buffer, ends.buffer]);
  }

  /** The signing thread, started when first needed. */
  private thread(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { key: this.key } });
    worker.on('message', (signatures: Uint8Array) => {
      const batch = this.sent;
      if (this.worker !== worker || batch === undefined) return;
      this.sent = undefined;
      this.failures = 0;
      worker.unref();
      const all = Buffer.from(signatures.buffer, signatures.byteOffset, signatures.byteLength);
      for (let i = 0; i < batch.length; i++) batch[i]!.resolve(all.subarray(i * SIGNATURE_BYTES, (i + 1) * SIGNATURE_BYTES));
      this.send();
    });
    const failed = (): void => {
      if (this.worker !== worker) return;
      this.worker = undefined;
      if (++this.failures >= MAX_FAILURES) this.closed = true;
      this.fallBack();
    };
    worker.on('error', failed);
    worker.on('exit', failed);
    this.worker = worker;
    return worker;
  }

  /** The batch the thread held, and everything waiting, are signed on the thread pool instead. */
  private fallBack(): void {
    const owed = [...(this.sent ?? []), ...this.waiting];
    this.sent = undefined;
    this.waiting = [];
    for (const w of owed) signOnThreadPool(w.content, this.key).then(w.resolve, w.reject);
  }
}
