import { performance } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import { FifoQueue } from '../fifo-queue.js';
import type { EncodedMode } from './qr-answer.js';

/** How much demand the stock covers: answers for this long at the rate of the last second. */
const LEAD_MS = 50;
/** At most this many answers per mode (~2 KB each) are kept ready or ordered. */
const MAX_STOCK = 512;
/**
 * Below this many answers per LEAD_MS (160 codes/s), requests encode their own code: the thread is
 * worth its messages only under load, and a node that never sees it never starts the thread.
 */
const MIN_ORDER = 8;
/** An answer older than this is thrown away: a code's time prefix says roughly when it was handed out. */
const MAX_AGE_MS = 1_000;
/** After this many thread failures in a row, requests encode their own codes for good. */
const MAX_FAILURES = 3;

/** What the stock sends the thread: codes to make the answers of. */
export interface StockOrder {
  id: number;
  mode: EncodedMode;
  codes: string[];
}
/** What the thread sends back: the answers, one after the other in `data`, answer i ending at `ends[i]`. */
export interface StockDelivery {
  id: number;
  data: ArrayBuffer;
  ends: Uint32Array;
}
/** What the thread needs to make answers (QrAnswers' options). */
export interface StockThreadData {
  publicBaseUrl: string;
  modulePixels: number;
}

/** A code and the whole answer of a QR request for it (JSON bytes). */
export interface ReadyAnswer {
  code: string;
  answer: Buffer;
}

/**
 * One delivered order, kept as it came (one buffer, the codes beside it) and handed out from `next` on:
 * per-answer objects would live past a young-generation collection or two and be promoted, and under
 * load that made the old generation fill, and be collected, several times a second.
 */
interface Batch {
  codes: string[];
  data: Buffer;
  ends: Uint32Array;
  next: number;
  madeAt: number;
}

/** One mode's answers, and the demand they are sized by. */
class Shelf {
  private readonly batches = new FifoQueue<Batch>();
  /** Answers in `batches` not handed out yet. */
  ready = 0;
  /** Answers ordered and not delivered yet (one order at a time). */
  ordered = 0;
  /** Codes asked for in the last whole second, and in the one under way since `since`. */
  private lastSecond = 0;
  private thisSecond = 0;
  private since: number;

  constructor(now: number) {
    this.since = now;
  }

  /** Counts a request; returns the answers worth keeping ready for the current demand (0: none). */
  demand(now: number): number {
    if (now - this.since >= 1_000) {
      // A gap longer than a second (no requests) counts as a quiet second.
      this.lastSecond = now - this.since < 2_000 ? this.thisSecond : 0;
      this.thisSecond = 0;
      this.since = now;
    }
    this.thisSecond++;
    const wanted = Math.min(MAX_STOCK, Math.floor((Math.max(this.lastSecond, this.thisSecond) * LEAD_MS) / 1_000));
    return wanted >= MIN_ORDER ? wanted : 0;
  }

  add(batch: Batch): void {
    this.batches.push(batch);
    this.ready += batch.codes.length;
  }

  /** The oldest answer made within MAX_AGE_MS; older ones are dropped. */
  take(now: number): ReadyAnswer | undefined {
    for (let batch = this.batches.peek(); batch !== undefined; batch = this.batches.peek()) {
      if (now - batch.madeAt > MAX_AGE_MS || batch.next === batch.codes.length) {
        this.ready -= batch.codes.length - batch.next;
        this.batches.shift();
        continue;
      }
      const i = batch.next++;
      this.ready--;
      return { code: batch.codes[i]!, answer: batch.data.subarray(i === 0 ? 0 : batch.ends[i - 1]!, batch.ends[i]!) };
    }
    return undefined;
  }

  clearOrders(): void {
    this.ordered = 0;
  }
}

/**
 * `text` and `base64` answers made ahead on a thread of their own (docs/signing.md "Encoder thread").
 * Encoding and rendering the symbol is most of a QR request's CPU (~30 µs of ~65 for `text`, ~55 of
 * ~90 for `base64`, docs/benchmarks.md#encoder-thread); under load the thread does it beside the event loop, for codes
 * the stock draws here with `newCode`, and a request takes the next ready answer with its code. When
 * none is ready (the first second of load, a burst, a failed thread, or little traffic) the request
 * encodes its own code as before: nothing ever waits for the thread. A code taken from the stock is
 * handed out once and never again; codes never taken are simply forgotten (they were never stored).
 */
export class QrStock {
  private readonly shelves: Record<EncodedMode, Shelf>;
  private readonly now: () => number;
  private readonly orders = new Map<number, StockOrder>();
  private nextId = 0;
  private worker: Worker | undefined;
  private failures = 0;
  private closed = false;

  constructor(
    private readonly o: StockThreadData & {
      /** A new login code (codes.ts), drawn when an order is sent. */
      newCode: () => string;
      /** Off: `take` always answers undefined and no thread is started. */
      enabled: boolean;
      /** Monotonic milliseconds (demand and age); tests pass their own. */
      now?: () => number;
    },
  ) {
    this.closed = !o.enabled;
    this.now = o.now ?? (() => performance.now());
    this.shelves = { text: new Shelf(this.now()), base64: new Shelf(this.now()) };
  }

  /** Whether the encoder thread is running now. */
  get threadRunning(): boolean {
    return this.worker !== undefined;
  }

  /** The next ready answer of `mode` with its code, or undefined: then the caller encodes a code of its own. */
  take(mode: EncodedMode): ReadyAnswer | undefined {
    if (this.closed) return undefined;
    const shelf = this.shelves[mode];
    const now = this.now();
    const wanted = shelf.demand(now);
    const ready = shelf.take(now);
    // One order per shelf at a time, sent once the shelf is down to half of what the demand asks for.
    if (wanted > 0 && shelf.ordered === 0 && shelf.ready <= wanted / 2) this.order(mode, wanted - shelf.ready);
    return ready;
  }

  /** Stops the thread; `take` answers undefined from now on. */
  async close(): Promise<void> {
    this.closed = true;
    this.orders.clear();
    const worker = this.worker;
    this.worker = undefined;
    await worker?.terminate();
  }

  private order(mode: EncodedMode, count: number): void {
    let worker: Worker;
    try {
      worker = this.thread();
    } catch {
      // A thread that cannot even start (resources, a missing file) counts as a failure; the request goes on.
      if (++this.failures >= MAX_FAILURES) void this.close();
      return;
    }
    const order: StockOrder = { id: this.nextId++, mode, codes: Array.from({ length: count }, () => this.o.newCode()) };
    this.orders.set(order.id, order);
    this.shelves[mode].ordered = count;
    worker.postMessage(order);
  }

  private delivered(delivery: StockDelivery): void {
    const order = this.orders.get(delivery.id);
    if (order === undefined) return;
    this.orders.delete(delivery.id);
    const shelf = this.shelves[order.mode];
    shelf.ordered = 0;
    // Answers are matched to the codes kept here, by position; a delivery of the wrong length is dropped.
    if (delivery.ends.length !== order.codes.length) return;
    this.failures = 0;
    shelf.add({ codes: order.codes, data: Buffer.from(delivery.data), ends: delivery.ends, next: 0, madeAt: this.now() });
  }

  /** The encoder thread, started with the first order. Never keeps the process alive: nobody waits for it. */
  private thread(): Worker {
    if (this.worker) return this.worker;
    const worker = startThread({ publicBaseUrl: this.o.publicBaseUrl, modulePixels: this.o.modulePixels });
    worker.unref();
    worker.on('message', (delivery: StockDelivery) => {
      if (this.worker === worker) this.delivered(delivery);
    });
    const failed = (): void => {
      if (this.worker !== worker) return;
      this.worker = undefined;
      // What it held was never handed out: requests encode their own codes until a new thread delivers.
      this.orders.clear();
      for (const shelf of Object.values(this.shelves)) shelf.clearOrders();
      if (++this.failures >= MAX_FAILURES) void this.close();
    };
    worker.on('error', failed);
    worker.on('exit', failed);
    this.worker = worker;
    return worker;
  }
}

/**
 * The compiled service runs the thread's .js file. From the TypeScript sources (tests, benchmarks under
 * tsx) the thread's .ts file needs a TypeScript loader first: tsx's, registered in the thread, as a
 * development dependency only ever loaded then.
 */
function startThread(data: StockThreadData): Worker {
  const fromSources = import.meta.url.endsWith('.ts');
  const entry = new URL(fromSources ? './qr-stock-thread.ts' : './qr-stock-thread.js', import.meta.url);
  if (!fromSources) return new Worker(entry, { workerData: data });
  const loader = import.meta.resolve('tsx/esm/api');
  const source = `import(${JSON.stringify(loader)}).then(({ register }) => { register(); return import(${JSON.stringify(entry.href)}); });`;
  return new Worker(source, { eval: true, workerData: data });
}
