/**
 * Load-generator child for the WebSocket benchmarks: opens and holds many `ws` client sockets
 * (subprotocol `ls`), each registering one tab, and measures event latency on receipt. Driven over
 * IPC by bench/lib/processes/channel-worker.ts. Loopback only.
 *
 * Commands:
 *   open    {url, prefix, from, to, concurrency}: opens tabs tabIdOf(prefix, i) for i in [from, to), each sends Register
 *   warmup  {url, prefix, count}: opens, registers, unregisters and closes `count` tabs (first-use costs off the books)
 *   latency-reset / latency-count / latency-result: per-event latency of `BenchLatency` events (data.t = sender's CLOCK_MONOTONIC ns)
 *   stats   {open, opened, failed, unexpectedCloses, received}
 *   close-all
 */
import { setTimeout as sleep } from 'node:timers/promises';
import WebSocket from 'ws';
import { tabIdOf } from '../lib/load/channel-ids.js';
import { serveWorker } from '../lib/processes/channel-worker.js';
import { EventLatencies, latencyCommands } from './event-latencies.js';
import { lanes } from './lanes.js';
import { retireWarmupTabs } from './warmup-tabs.js';

const sockets: WebSocket[] = [];
let failed = 0;
let firstError: string | undefined;
let unexpectedCloses = 0;
let closing = false;
const received = new Map<string, number>();
const latencies = new EventLatencies();

const assertLoopback = (url: string): void => {
  if (new URL(url).hostname !== '127.0.0.1') throw new Error('loopback only');
};

function onMessage(data: WebSocket.RawData): void {
  const at = process.hrtime.bigint();
  const frame = JSON.parse(data.toString()) as { type: string; data: unknown; id: number };
  received.set(frame.type, (received.get(frame.type) ?? 0) + 1);
  if (frame.type === 'BenchLatency') latencies.record((frame.data as { t: string }).t, at);
}

function openOne(url: string, tabId: string, keep: boolean): Promise<WebSocket | undefined> {
  return new Promise((resolve) => {
    const ws = new WebSocket(url, 'ls', { perMessageDeflate: false, handshakeTimeout: 30_000 });
    ws.once('open', () => {
      ws.off('error', onError);
      ws.on('error', () => undefined);
      ws.send(JSON.stringify({ cmd: 'Register', tabId, location: 'http://127.0.0.1/bench' }));
      if (keep) {
        ws.on('message', onMessage);
        ws.on('close', () => {
          if (!closing) unexpectedCloses++;
        });
      }
      resolve(ws);
    });
    const onError = (err: Error): void => {
      failed++;
      firstError ??= err.message;
      resolve(undefined);
    };
    ws.once('error', onError);
  });
}

serveWorker(
  {
    async open(a: { url: string; prefix: string; from: number; to: number; concurrency: number }) {
      assertLoopback(a.url);
      const started = performance.now();
      let opened = 0;
      await lanes(a.from, a.to, a.concurrency, async (i) => {
        const ws = await openOne(a.url, tabIdOf(a.prefix, i), true);
        if (ws) {
          sockets.push(ws);
          opened++;
        }
      });
      return { opened, failed, firstError, ms: performance.now() - started, total: sockets.length };
    },
    async warmup(a: { url: string; prefix: string; count: number }) {
      assertLoopback(a.url);
      const opened: WebSocket[] = [];
      await lanes(0, a.count, 100, async (n) => {
        const ws = await openOne(a.url, tabIdOf(a.prefix, n), false);
        if (ws) opened.push(ws);
      });
      await sleep(200);
      await retireWarmupTabs(opened, 200);
      return { warmed: opened.length };
    },
    ...latencyCommands(latencies),
    stats() {
      return {
        open: sockets.filter((ws) => ws.readyState === WebSocket.OPEN).length,
        opened: sockets.length,
        failed,
        firstError,
        unexpectedCloses,
        received: Object.fromEntries(received),
      };
    },
    async 'close-all'() {
      closing = true;
      for (const ws of sockets) ws.terminate();
      sockets.length = 0;
      return true;
    },
  },
  () => {
    closing = true;
    for (const ws of sockets) ws.terminate();
  },
);
