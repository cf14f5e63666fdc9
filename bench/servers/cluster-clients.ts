/**
 * Load-generator child for the cluster benchmark (bench/cluster.ts): holds many waiting pages' WebSockets
 * to one tabwire node, as the event script does: handshake on /ClientEventsWS with subprotocol `ls` and
 * the page's Origin, the session cookie taken from the 101 response (one session per tab), `Register`, the
 * server's CheckServerInstance back, then `Ping` every `pingMs` (phases spread). The parent asks for the
 * cookies, so it can send the tabs' QR requests and signatures to any node. Arrival times are read with
 * process.hrtime (CLOCK_MONOTONIC, shared by every process on the machine) before parsing. Loopback only.
 * Driven over IPC by bench/lib/processes/channel-worker.ts.
 *
 * Commands:
 *   setup   {port, origin, prefix, pingMs}
 *   warmup  {count}: opens, registers, unregisters and closes `count` tabs (first-use costs off the books)
 *   open    {from, to, concurrency}: opens and registers tabs tabIdOf(prefix, i), i in [from, to)
 *   close   {from, to}: closes tabs from..to-1 as a leaving page does (close 1000); not counted as unexpected
 *   cookies {from, to}: the session cookies (`tabwire_sid=…`) of tabs from..to-1
 *   latency-reset / latency-count / latency-result / latency-samples: `BenchLatency` events (data.t = sender's
 *           CLOCK_MONOTONIC ns); latency-samples answers [sent ns, ms] per event
 *   arrivals-reset / arrivals-read: CLOCK_MONOTONIC ns at which each tab received `SignatureReceived`
 *   stats   {open, failed, unexpectedCloses, received}
 */
import WebSocket from 'ws';
import { tabIdOf } from '../lib/load/channel-ids.js';
import { serveWorker } from '../lib/processes/channel-worker.js';
import { openRegistered } from '../lib/load/registered-socket.js';
import { EventLatencies, latencyCommands } from './event-latencies.js';
import { lanes } from './lanes.js';
import { startPings, stopPings } from './tab-pings.js';
import { retireWarmupTabs } from './warmup-tabs.js';

interface Setup {
  port: number;
  origin: string;
  prefix: string;
  pingMs: number;
}

interface Tab {
  ws: WebSocket;
  cookie: string;
  ping: NodeJS.Timeout | undefined;
}

let setup: Setup | undefined;
const tabs = new Map<number, Tab>();
let failed = 0;
let firstError: string | undefined;
let unexpectedCloses = 0;
let stopping = false;
/** Tabs closed on purpose (`close`): their close events are expected. */
const leaving = new Set<WebSocket>();
const received = new Map<string, number>();
/** With each sample's send time, for `latency-samples`. */
const latencies = new EventLatencies(true);
let arrivals: [string, string][] = [];

const assertSetup = (): Setup => {
  if (!setup) throw new Error('setup first');
  return setup;
};

function onFrame(tabId: string, raw: WebSocket.RawData): void {
  const at = process.hrtime.bigint();
  const frame = JSON.parse(raw.toString()) as { type: string; data: unknown };
  received.set(frame.type, (received.get(frame.type) ?? 0) + 1);
  if (frame.type === 'BenchLatency') {
    latencies.record((frame.data as { t: string }).t, at);
  } else if (frame.type === 'SignatureReceived') {
    arrivals.push([tabId, at.toString()]);
  }
}

/** Opens one tab; resolves once the server answered its Register (CheckServerInstance). */
async function openTab(s: Setup, n: number, keep: boolean): Promise<Tab> {
  const id = tabIdOf(s.prefix, n);
  const { ws, cookie } = await openRegistered({ port: s.port, origin: s.origin, tabId: id });
  if (keep) {
    ws.on('message', (raw) => onFrame(id, raw));
    ws.on('close', () => {
      if (!stopping && !leaving.delete(ws)) unexpectedCloses++;
    });
  }
  return { ws, cookie, ping: undefined };
}

serveWorker(
  {
    setup(a: Setup) {
      if (setup) throw new Error('already set up');
      if (!a.origin.startsWith('http://127.0.0.1:')) throw new Error('loopback only');
      setup = a;
      return true;
    },
    async warmup(a: { count: number }) {
      const s = assertSetup();
      const opened: WebSocket[] = [];
      await lanes(0, a.count, 100, async (n) => {
        try {
          opened.push((await openTab({ ...s, prefix: `${s.prefix}warm-` }, n, false)).ws);
        } catch {
          // counted by the caller's checks (the server must count none of them afterwards)
        }
      });
      await retireWarmupTabs(opened, 300);
      return { warmed: opened.length };
    },
    async open(a: { from: number; to: number; concurrency: number }) {
      const s = assertSetup();
      const started = performance.now();
      let opened = 0;
      await lanes(a.from, a.to, a.concurrency, async (n) => {
        try {
          const tab = await openTab(s, n, true);
          tabs.set(n, tab);
          startPings(tab, s.pingMs);
          opened++;
        } catch (err) {
          failed++;
          firstError ??= (err as Error).message;
        }
      });
      return { opened, failed, firstError, ms: performance.now() - started, total: tabs.size };
    },
    async close(a: { from: number; to: number }) {
      const closing: Promise<void>[] = [];
      for (let n = a.from; n < a.to; n++) {
        const tab = tabs.get(n);
        if (!tab) continue;
        tabs.delete(n);
        stopPings(tab);
        leaving.add(tab.ws);
        closing.push(new Promise<void>((resolve) => tab.ws.once('close', () => resolve())));
        tab.ws.close(1000, 'page left');
      }
      await Promise.all(closing);
      return { closed: closing.length, total: tabs.size };
    },
    cookies(a: { from: number; to: number }) {
      const out: string[] = [];
      for (let n = a.from; n < a.to; n++) {
        const tab = tabs.get(n);
        if (!tab) throw new Error(`tab ${n} is not open`);
        out.push(tab.cookie);
      }
      return out;
    },
    ...latencyCommands(latencies),
    'latency-samples'() {
      return latencies.samples();
    },
    'arrivals-reset'() {
      arrivals = [];
      return true;
    },
    'arrivals-read'() {
      return arrivals;
    },
    stats() {
      let open = 0;
      for (const tab of tabs.values()) if (tab.ws.readyState === WebSocket.OPEN) open++;
      return { open, failed, firstError, unexpectedCloses, received: Object.fromEntries(received) };
    },
  },
  () => {
    stopping = true;
    for (const tab of tabs.values()) {
      stopPings(tab);
      tab.ws.terminate();
    }
  },
);
