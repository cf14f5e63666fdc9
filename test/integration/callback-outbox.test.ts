import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, beforeAll, afterAll, describe, expect, it } from 'vitest';
import { CallbackDeliverer } from '../../src/callbacks/deliverer.js';
import { ManualClock } from '../../src/clock.js';
import { createMetrics } from '../../src/metrics.js';
import { openSqliteStore } from '../../src/store/sqlite/open.js';
import type { Callback, Store } from '../../src/store/stores.js';
import { testResolver } from '../helpers/service.js';
import { selfSignedCertificate } from '../helpers/tls.js';
import { until } from '../helpers/until.js';

// The outbox's own queue: a node stores its new callbacks already leased to itself and attempts them as
// attempt slots free up. These tests make the slots and the queue tiny and hold the backend's answers.

const tls = selfSignedCertificate();
const TIMEOUT_MS = 2_000;
const LEASE_MS = TIMEOUT_MS + 1_000;

/** A backend that answers a callback only when the test releases it. */
class HeldBackend {
  readonly received: string[] = [];
  private readonly waiting = new Map<string, ServerResponse>();
  private server!: Server;
  url = '';

  /** Answer at once with 200 and this many bytes of body (instead of holding the answer). */
  answerBytes: number | undefined;
  /** Bytes of those answers that went out before the client closed the connection. */
  answerBytesWritten = 0;

  async start(): Promise<void> {
    this.server = createServer({ cert: tls.cert, key: tls.key }, (req, res) => {
      req.resume();
      req.on('end', () => {
        const id = String(req.headers['webhook-id']);
        this.received.push(id);
        if (this.answerBytes === undefined) {
          this.waiting.set(id, res);
          return;
        }
        // A large answer, written in chunks as the client reads them.
        res.writeHead(200, { 'content-type': 'text/plain' });
        const chunk = Buffer.alloc(16_384, 'x');
        let left = this.answerBytes;
        const write = (): void => {
          while (left > 0) {
            left -= chunk.length;
            this.answerBytesWritten += chunk.length;
            if (!res.write(chunk)) return void res.once('drain', write);
          }
          res.end();
        };
        res.on('close', () => (left = 0));
        write();
      });
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `https://127.0.0.1:${(this.server.address() as { port: number }).port}/callback`;
  }

  release(id: string): void {
    const res = this.waiting.get(id);
    if (!res) throw new Error(`${id} is not waiting`);
    this.waiting.delete(id);
    res.writeHead(200).end('ok');
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

const dir = mkdtempSync(join(tmpdir(), 'tabwire-outbox-'));
let backend: HeldBackend;
let store: Store;
let deliverer: CallbackDeliverer | undefined;
let clock: ManualClock;
let files = 0;
/** The outbox's log lines (parsed). */
let logLines: Array<{ msg: string; webhookId?: string }> = [];

beforeAll(async () => {
  backend = new HeldBackend();
  await backend.start();
});
afterAll(async () => {
  await backend.close();
  rmSync(dir, { recursive: true, force: true });
});
afterEach(async () => {
  await deliverer?.stop();
  await store.close();
  backend.answerBytes = undefined;
});

async function setUp(limits: { concurrency: number; queueLimit: number }, timeoutMs = TIMEOUT_MS): Promise<CallbackDeliverer> {
  clock = new ManualClock(1_800_000_000_000);
  logLines = [];
  store = await openSqliteStore(join(dir, `outbox-${files++}.sqlite`));
  deliverer = new CallbackDeliverer(
    {
      callbacks: store.callbacks,
      delivery: { deliver: async () => true },
      clock,
      log: pino({ level: 'info' }, { write: (line: string) => void logLines.push(JSON.parse(line) as { msg: string }) }),
      metrics: createMetrics(),
      resolve: testResolver(),
    },
    {
      privateKey: generateKeyPairSync('ed25519').privateKey,
      policy: { allowHttpLoopback: false, allowedHosts: ['127.0.0.1'] },
      ca: tls.cert.toString(),
      retryBaseMs: 1_000,
      retryCapMs: 1_000,
      connectTimeoutMs: timeoutMs,
      totalTimeoutMs: timeoutMs,
      pollMs: 60_000,
      ...limits,
    },
  );
  return deliverer;
}

const callback = (id: string, nextAttemptAt = clock.now()): Callback => ({
  id,
  serviceId: 'svc',
  tabId: '',
  tabSession: null,
  url: backend.url,
  body: JSON.stringify({ id }),
  webhookSecret: null,
  state: 'pending',
  attempts: 0,
  nextAttemptAt,
  deadline: clock.now() + 300_000,
  lastError: null,
  createdAt: clock.now(),
  deliveredAt: null,
});

const stateOf = async (id: string) => (await store.callbacks.get(id))?.state;

describe('callback outbox queue', () => {
  it('a callback that waited for a free slot until its lease lapsed is not sent when another claim took it meanwhile', async () => {
    const outbox = await setUp({ concurrency: 1, queueLimit: 10 });
    expect(await outbox.enqueue(callback('msg_first'))).toBe(true);
    await until(() => backend.received.includes('msg_first'), 'the first callback to reach the backend');
    // The one slot is busy: the second waits in this node's queue, leased to it.
    expect(await outbox.enqueue(callback('msg_second', clock.now() - 1_000))).toBe(true);
    clock.advance(60_000);
    // Another node claims what is due and unleased: only the second (the earlier due of the two).
    const taken = await store.callbacks.claimDue(clock.now(), LEASE_MS, 1);
    expect(taken.map((c) => c.id)).toEqual(['msg_second']);

    backend.release('msg_first');
    await until(async () => (await stateOf('msg_first')) === 'delivered', 'the first callback to be delivered');
    // The slot is free again; this node must let the second go instead of sending it beside the other node.
    await until(() => logLines.some((l) => l.webhookId === 'msg_second' && /another claim took it/.test(l.msg)), 'the outbox to let the second go');
    await outbox.stop();
    expect(backend.received).toEqual(['msg_first']);
    expect(await stateOf('msg_second')).toBe('pending');
  });

  it('renews the lease of a callback that waited past it, and sends it once', async () => {
    const outbox = await setUp({ concurrency: 1, queueLimit: 10 });
    const before = backend.received.length;
    await outbox.enqueue(callback('msg_a'));
    await until(() => backend.received.includes('msg_a'), 'the first callback to reach the backend');
    await outbox.enqueue(callback('msg_b'));
    clock.advance(60_000);
    backend.release('msg_a');
    await until(() => backend.received.includes('msg_b'), 'the waiting callback to be sent');
    // While it is being attempted, its renewed lease keeps other claims off it.
    expect(await store.callbacks.claimDue(clock.now(), LEASE_MS, 10)).toEqual([]);
    backend.release('msg_b');
    await until(async () => (await stateOf('msg_b')) === 'delivered', 'the waiting callback to be delivered');
    expect(backend.received.slice(before)).toEqual(['msg_a', 'msg_b']);
  });

  it('beyond the queue limit, a callback is stored unleased and a claim pass delivers it', async () => {
    const outbox = await setUp({ concurrency: 1, queueLimit: 1 });
    const before = backend.received.length;
    await outbox.enqueue(callback('msg_held'));
    await until(() => backend.received.includes('msg_held'), 'the held callback to reach the backend');
    // The queue is full (one held, being attempted): this one goes to the store for a pass to claim.
    await outbox.enqueue(callback('msg_over'));
    await until(() => backend.received.includes('msg_over'), 'the pass to send the callback over the limit');
    backend.release('msg_over');
    backend.release('msg_held');
    await until(async () => (await stateOf('msg_over')) === 'delivered' && (await stateOf('msg_held')) === 'delivered', 'both to be delivered');
    expect(backend.received.slice(before).sort()).toEqual(['msg_held', 'msg_over']);
  });
});

describe('callback attempts', () => {
  it('an attempt the backend never answers ends at callbackTimeoutMs as a timeout, and the callback waits for its retry', async () => {
    const outbox = await setUp({ concurrency: 4, queueLimit: 10 }, 300);
    await outbox.enqueue(callback('msg_silent'));
    await until(async () => (await store.callbacks.get('msg_silent'))?.lastError === 'timeout', 'the attempt to time out', 5_000);
    expect(await store.callbacks.get('msg_silent')).toMatchObject({ state: 'pending', attempts: 1, lastError: 'timeout' });
    expect(backend.received.filter((id) => id === 'msg_silent')).toHaveLength(1);
  });

  it('a 200 with a huge body counts as delivered, and the body is not read beyond a few KiB', async () => {
    const outbox = await setUp({ concurrency: 4, queueLimit: 10 });
    backend.answerBytes = 64 * 1024 * 1024;
    backend.answerBytesWritten = 0;
    await outbox.enqueue(callback('msg_chatty'));
    await until(async () => (await stateOf('msg_chatty')) === 'delivered', 'the callback to be delivered');
    // The client closed the connection early: far less than the 64 MiB went out (socket buffers hold some).
    expect(backend.answerBytesWritten).toBeLessThan(8 * 1024 * 1024);
  });
});
