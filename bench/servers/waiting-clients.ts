/**
 * Load-generator child for the waiting-people benchmark and the soak (bench/waiting-people.ts,
 * bench/soak.ts): many waiting login pages, each doing what the service's demo page does
 * (public/demo.js, with the event script's WebSocket):
 *
 *   - a WebSocket to /ClientEventsWS with subprotocol `ls` and the page's Origin; the session
 *     cookie comes from the 101 response's Set-Cookie (one session per tab: one person, one browser);
 *   - `Register` with its tab id, then `Ping` every 10 s;
 *   - POST /QuickLogin with its cookie every 2 s *after the previous answer* (the demo page and the
 *     reference pages ask again 2 s after an answer, so a slow answer slows the page down too);
 *     in `image` mode the page then loads the PNG (GET /QuickLogin/Qr/<code>.png), as its <img> does.
 *
 * The HTTP requests go over a keep-alive pool of raw sockets shared by this process's tabs (one
 * process may hold only ~20,000 open files, and so may the server): the picture is a reverse proxy
 * in front of the service keeping a pool of upstream connections. Each request still carries its
 * own tab's cookie. Latency runs from the moment a tab's timer fires (waiting for a free pool
 * connection included) until the last byte of the answer (of the PNG in `image` mode). Loopback only.
 *
 * Commands (driven over IPC by bench/lib/channel-worker.ts):
 *   setup        {port, mode, periodMs, pingMs, poolSize, prefix}
 *   open         {from, to, concurrency}: opens and registers tabs tabIdOf(prefix, i), i in [from, to)
 *   start        {}: every opened tab that is not refreshing yet starts; first requests spread evenly over periodMs
 *   drop         {count}: the last `count` tabs stop, send Unregister and close (1000), as a page that is left
 *   churn        {meanStayMs}: people come and go: each running tab leaves after a random stay (exponential,
 *                this mean; as `drop` does) and a new person's page takes its place at once (new WebSocket,
 *                session and tab id, Register, a QR request as the page loads); 0 stops it
 *   window-start {}: resets the counters and histograms
 *   window-read  {}: what happened since window-start (see WindowReading)
 */
import { connect, type Socket } from 'node:net';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import WebSocket from 'ws';
import { tabIdOf } from '../lib/channel-ids.js';
import { serveWorker } from '../lib/channel-worker.js';
import { LatencyHistogram, type HistogramData } from '../lib/latency-histogram.js';

export type WaitingMode = 'image' | 'text';

interface Setup {
  port: number;
  mode: WaitingMode;
  periodMs: number;
  pingMs: number;
  poolSize: number;
  prefix: string;
}

/** What `window-read` answers. */
export interface WindowReading {
  /** Whole refresh: POST (and the PNG in image mode), from the timer to the last byte. */
  total: HistogramData;
  /** The POST alone (image mode; empty in text mode). */
  post: HistogramData;
  /** Refreshes completed without error in the window. */
  ok: number;
  errors: number;
  errorKinds: Record<string, number>;
  firstError: string | undefined;
  /** HTTP requests answered in the window (2 per refresh in image mode). */
  httpAnswers: number;
  /** Refreshes still waiting for an answer now, and the age of the oldest (ms). */
  outstanding: number;
  oldestOutstandingMs: number;
  /** Sockets the server closed since the tabs were opened (cumulative). */
  unexpectedCloses: number;
  /** This process's event-loop delay in the window (ms): a busy generator shows here. */
  loopP99Ms: number;
  loopMaxMs: number;
  /** Longest queue of requests waiting for a pool connection in the window. */
  maxQueue: number;
  tabs: number;
  windowMs: number;
  /** Refreshes started per `arrivalBinMs` of the window, from its start (see `arrivalBunching` in waiting-rig.ts). */
  arrivals: number[];
  arrivalBinMs: number;
  /** With churn: pages that left, and new pages that took their place, in the window. */
  left: number;
  arrived: number;
  /** With churn: a new page's WebSocket handshake + Register until CheckServerInstance (ms). */
  register: HistogramData;
}

/** Width of the bins `arrivals` counts refreshes in. */
const ARRIVAL_BIN_MS = 20;

const PURPOSE = 'Log in to the tabwire demo';
const USER_AGENT = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36';
const HEADER_END = Buffer.from('\r\n\r\n');
const PNG_FIRST_BYTE = 0x89;

let setup: Setup | undefined;
let origin = '';
let pool: Pool | undefined;
const tabs: Tab[] = [];
let unexpectedCloses = 0;
let stopping = false;

// Per window.
const total = new LatencyHistogram();
const post = new LatencyHistogram();
let ok = 0;
let errors = 0;
let errorKinds: Record<string, number> = {};
let firstError: string | undefined;
let httpAnswers = 0;
let maxQueue = 0;
let windowStart = performance.now();
/** Refreshes started per ARRIVAL_BIN_MS since windowStart; bounded to a window of 10 minutes. */
let arrivals: number[] = [];
const MAX_ARRIVAL_BINS = 600_000 / ARRIVAL_BIN_MS;
// Churn (see the `churn` command): the mean stay, and the numbers new pages' tab ids start from.
let churnMeanMs = 0;
let nextArrival = 90_000_000;
let left = 0;
let arrived = 0;
const register = new LatencyHistogram();
// Sampled every 1 ms; a sample is the time between two timer runs, so 1 ms is "no delay".
const loop = monitorEventLoopDelay({ resolution: 1 });
loop.enable();

const assertSetup = (): Setup => {
  if (!setup) throw new Error('setup first');
  return setup;
};

type Answer = (status: number, head: string, body: Buffer) => void;
interface Job {
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
  private pending: Buffer = Buffer.alloc(0);
  private job: Job | undefined;
  private dead = false;

  constructor(
    private readonly pool: Pool,
    port: number,
  ) {
    this.socket = connect({ host: '127.0.0.1', port });
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
    this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    const headerEnd = this.pending.indexOf(HEADER_END);
    if (headerEnd < 0) return;
    const head = this.pending.toString('latin1', 0, headerEnd);
    const match = /\r\ncontent-length:\s*(\d+)/i.exec(head);
    if (!match) return this.broken('an answer without Content-Length');
    const end = headerEnd + HEADER_END.length + Number(match[1]);
    if (this.pending.length < end) return;
    if (this.pending.length > end) return this.broken('bytes beyond one answer');
    const body = this.pending.subarray(headerEnd + HEADER_END.length);
    this.pending = Buffer.alloc(0);
    const job = this.job;
    this.job = undefined;
    this.pool.release(this);
    httpAnswers++;
    job?.answer(Number(head.slice(9, 12)), head, body);
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
class Pool {
  private idle: PooledConnection[] = [];
  private queue: Job[] = [];
  private head = 0;

  constructor(
    private readonly port: number,
    size: number,
  ) {
    for (let i = 0; i < size; i++) this.idle.push(new PooledConnection(this, port));
  }

  request(job: Job): void {
    const connection = this.idle.shift();
    if (connection) return connection.send(job);
    this.queue.push(job);
    maxQueue = Math.max(maxQueue, this.queue.length - this.head);
  }

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

  replace(dead: PooledConnection): void {
    this.idle = this.idle.filter((c) => c !== dead);
    if (!stopping) this.release(new PooledConnection(this, this.port));
  }

  close(): void {
    for (const c of this.idle) c.destroy();
  }
}

interface Tab {
  id: string;
  /** Its index in `tabs`; a page that replaces it under churn takes the same. */
  slot: number;
  ws: WebSocket;
  /** The whole POST /QuickLogin request, built once (its body and cookie never change). */
  post: Buffer;
  cookie: string;
  running: boolean;
  leaving: boolean;
  /** performance.now() when the refresh in flight started; 0 when none is. */
  since: number;
  refresh: NodeJS.Timeout | undefined;
  ping: NodeJS.Timeout | undefined;
  /** With churn: when this person leaves. */
  leave: NodeJS.Timeout | undefined;
}

function note(kind: string, detail: string): void {
  errors++;
  errorKinds[kind] = (errorKinds[kind] ?? 0) + 1;
  firstError ??= `${kind}: ${detail}`;
}

function finish(tab: Tab, error?: { kind: string; detail: string }): void {
  const started = tab.since;
  tab.since = 0;
  if (error) note(error.kind, error.detail);
  else {
    ok++;
    total.record(performance.now() - started);
  }
  // The demo page asks again 2 s after every answer, an error included.
  if (tab.running) tab.refresh = setTimeout(refresh, assertSetup().periodMs, tab);
}

function refresh(tab: Tab): void {
  tab.refresh = undefined;
  if (!tab.running || !pool) return;
  tab.since = performance.now();
  const bin = Math.floor((tab.since - windowStart) / ARRIVAL_BIN_MS);
  if (bin < MAX_ARRIVAL_BINS) arrivals[bin] = (arrivals[bin] ?? 0) + 1;
  pool.request({
    bytes: tab.post,
    answer: (status, _head, body) => onQrAnswer(tab, status, body),
    fail: (message) => finish(tab, { kind: 'connection', detail: message }),
  });
}

function onQrAnswer(tab: Tab, status: number, body: Buffer): void {
  if (status !== 200) return finish(tab, { kind: `POST ${status}`, detail: body.toString('utf8', 0, Math.min(body.length, 300)) });
  let answer: { signUrl?: unknown; text?: unknown; src?: unknown; width?: unknown };
  try {
    answer = JSON.parse(body.toString('utf8')) as typeof answer;
  } catch {
    return finish(tab, { kind: 'POST body', detail: 'not JSON' });
  }
  if (typeof answer.signUrl !== 'string') return finish(tab, { kind: 'POST body', detail: 'no signUrl' });
  if (assertSetup().mode === 'text') {
    if (typeof answer.text !== 'string' || answer.text.length === 0) return finish(tab, { kind: 'POST body', detail: 'no text' });
    return finish(tab);
  }
  const src = answer.src;
  const at = typeof src === 'string' ? src.indexOf('/QuickLogin/Qr/') : -1;
  if (typeof src !== 'string' || at < 0 || typeof answer.width !== 'number') return finish(tab, { kind: 'POST body', detail: 'no src/width' });
  post.record(performance.now() - tab.since);
  pool!.request({
    bytes: pngRequest(src.slice(at), tab.cookie),
    answer: (pngStatus, head, png) => {
      if (pngStatus !== 200) return finish(tab, { kind: `PNG ${pngStatus}`, detail: png.toString('utf8', 0, Math.min(png.length, 300)) });
      if (!/\r\ncontent-type: image\/png/i.test(head) || png[0] !== PNG_FIRST_BYTE) return finish(tab, { kind: 'PNG body', detail: 'not a PNG' });
      finish(tab);
    },
    fail: (message) => finish(tab, { kind: 'connection', detail: message }),
  });
}

const httpHead = (lines: string[]): string => `${lines.join('\r\n')}\r\n\r\n`;

function qrRequest(s: Setup, tabId: string, cookie: string): Buffer {
  // The body the demo page sends (image mode), or the reference pages' four fields (text mode).
  const body = Buffer.from(
    JSON.stringify(
      s.mode === 'image'
        ? { mode: 'image', purpose: PURPOSE, serviceId: '', tab: tabId, propertyFilter: 'FIRST,LAST,COUNTRY,EMAIL' }
        : { serviceId: '', tab: tabId, mode: 'text', purpose: PURPOSE },
    ),
  );
  const head = httpHead([
    'POST /QuickLogin HTTP/1.1',
    `Host: 127.0.0.1:${s.port}`,
    `User-Agent: ${USER_AGENT}`,
    'Accept: */*',
    'Accept-Language: en-US,en;q=0.9',
    'Content-Type: application/json',
    `Origin: ${origin}`,
    `Referer: ${origin}/`,
    `Cookie: ${cookie}`,
    `Content-Length: ${body.length}`,
  ]);
  return Buffer.concat([Buffer.from(head, 'latin1'), body]);
}

function pngRequest(path: string, cookie: string): Buffer {
  const s = assertSetup();
  return Buffer.from(
    httpHead([
      `GET ${path} HTTP/1.1`,
      `Host: 127.0.0.1:${s.port}`,
      `User-Agent: ${USER_AGENT}`,
      'Accept: image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8',
      'Accept-Language: en-US,en;q=0.9',
      `Referer: ${origin}/`,
      `Cookie: ${cookie}`,
    ]),
    'latin1',
  );
}

/** Opens one tab: handshake (cookie from the 101), Register, and the server's CheckServerInstance back. */
function openTab(s: Setup, n: number): Promise<Tab> {
  const id = tabIdOf(s.prefix, n);
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws://127.0.0.1:${s.port}/ClientEventsWS`, 'ls', {
      perMessageDeflate: false,
      handshakeTimeout: 30_000,
      headers: { Origin: origin, 'User-Agent': USER_AGENT },
    });
    let cookie: string | undefined;
    let settled = false;
    const timer = setTimeout(() => fail(new Error('no CheckServerInstance within 30 s of Register')), 30_000);
    const fail = (err: Error): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      ws.terminate();
      reject(err);
    };
    ws.once('upgrade', (response) => {
      const setCookie = response.headers['set-cookie'] ?? [];
      cookie = setCookie.map((c) => c.split(';')[0]!).find((c) => c.startsWith('tabwire_sid='));
    });
    ws.once('error', fail);
    ws.once('open', () => {
      if (cookie === undefined) return fail(new Error('the 101 response set no tabwire_sid cookie'));
      ws.send(JSON.stringify({ cmd: 'Register', tabId: id, location: `${origin}/` }));
    });
    ws.on('message', (data) => {
      if (settled) return;
      const frame = JSON.parse(data.toString()) as { type?: string };
      if (frame.type !== 'CheckServerInstance') return;
      settled = true;
      clearTimeout(timer);
      ws.off('error', fail);
      ws.on('error', () => undefined);
      const tab: Tab = { id, slot: -1, ws, cookie: cookie!, post: qrRequest(s, id, cookie!), running: false, leaving: false, since: 0, refresh: undefined, ping: undefined, leave: undefined };
      ws.on('close', () => {
        if (!tab.leaving && !stopping) {
          unexpectedCloses++;
          tab.running = false;
        }
      });
      resolve(tab);
    });
  });
}

function startPings(tab: Tab, s: Setup): void {
  const ping = (): void => {
    if (tab.ws.readyState === WebSocket.OPEN) tab.ws.send('{"cmd":"Ping"}');
  };
  // The event script pings every 10 s from its own start: phases spread over the interval.
  tab.ping = setTimeout(() => {
    ping();
    tab.ping = setInterval(ping, s.pingMs);
  }, Math.random() * s.pingMs);
}

function stopTab(tab: Tab): void {
  tab.running = false;
  tab.leaving = true;
  clearTimeout(tab.refresh);
  clearTimeout(tab.ping);
  clearInterval(tab.ping);
  clearTimeout(tab.leave);
}

/** What the event script does on beforeunload: Unregister, then close. Resolves once closed (or cut after 10 s). */
function closeLeftTab(tab: Tab): Promise<void> {
  return new Promise<void>((resolve) => {
    if (tab.ws.readyState !== WebSocket.OPEN) return resolve();
    const timer = setTimeout(() => {
      tab.ws.terminate();
      resolve();
    }, 10_000);
    tab.ws.once('close', () => {
      clearTimeout(timer);
      resolve();
    });
    tab.ws.send('{"cmd":"Unregister"}');
    tab.ws.close(1000);
  });
}

/** An exponential stay with the churn's mean: people leave at random moments, independently of each other. */
function scheduleLeave(tab: Tab): void {
  clearTimeout(tab.leave);
  tab.leave = churnMeanMs > 0 ? setTimeout(leaveAndReplace, -Math.log(1 - Math.random()) * churnMeanMs, tab) : undefined;
}

/** A person leaves (logged in, or gave up) and another arrives: a new page in the same slot, asking for a code at once. */
function leaveAndReplace(tab: Tab): void {
  const s = assertSetup();
  if (stopping || churnMeanMs === 0 || tabs[tab.slot] !== tab) return;
  stopTab(tab);
  left++;
  void closeLeftTab(tab);
  const started = performance.now();
  openTab(s, nextArrival++).then(
    (fresh) => {
      if (stopping) return void fresh.ws.terminate();
      // The churn stopped and `drop` took the slot meanwhile: this page leaves at once.
      if (tabs[tab.slot] !== tab) {
        stopTab(fresh);
        return void closeLeftTab(fresh);
      }
      register.record(performance.now() - started);
      arrived++;
      fresh.slot = tab.slot;
      tabs[tab.slot] = fresh;
      startPings(fresh, s);
      fresh.running = true;
      refresh(fresh);
      scheduleLeave(fresh);
    },
    (err: unknown) => note('open', (err as Error).message),
  );
}

serveWorker(
  {
    setup(a: Setup) {
      if (setup) throw new Error('already set up');
      setup = a;
      origin = `http://127.0.0.1:${a.port}`;
      pool = new Pool(a.port, a.poolSize);
      return true;
    },
    async open(a: { from: number; to: number; concurrency: number }) {
      const s = assertSetup();
      const started = performance.now();
      let next = a.from;
      let failed = 0;
      let openError: string | undefined;
      const opened: Tab[] = [];
      const lane = async (): Promise<void> => {
        while (next < a.to) {
          const n = next++;
          try {
            const tab = await openTab(s, n);
            opened.push(tab);
            startPings(tab, s);
          } catch (err) {
            failed++;
            openError ??= (err as Error).message;
          }
        }
      };
      await Promise.all(Array.from({ length: Math.max(1, a.concurrency) }, lane));
      for (const tab of opened) tab.slot = tabs.push(tab) - 1;
      return { opened: opened.length, failed, firstError: openError, ms: performance.now() - started, tabs: tabs.length };
    },
    start() {
      const s = assertSetup();
      const fresh = tabs.filter((t) => !t.running && !t.leaving && t.ws.readyState === WebSocket.OPEN);
      // Evenly over one period: the pages of people who arrived at different moments.
      fresh.forEach((tab, k) => {
        tab.running = true;
        tab.refresh = setTimeout(refresh, (k / fresh.length) * s.periodMs, tab);
      });
      return { started: fresh.length };
    },
    async drop(a: { count: number }) {
      if (churnMeanMs > 0) throw new Error('stop the churn before dropping tabs');
      const leaving = tabs.splice(Math.max(0, tabs.length - a.count));
      await Promise.all(
        leaving.map((tab) => {
          stopTab(tab);
          return closeLeftTab(tab);
        }),
      );
      return { tabs: tabs.length };
    },
    churn(a: { meanStayMs: number }) {
      churnMeanMs = a.meanStayMs;
      for (const tab of tabs) if (tab.running) scheduleLeave(tab);
      return true;
    },
    'window-start'() {
      total.reset();
      post.reset();
      ok = 0;
      errors = 0;
      errorKinds = {};
      firstError = undefined;
      httpAnswers = 0;
      maxQueue = 0;
      loop.reset();
      windowStart = performance.now();
      arrivals = [];
      left = 0;
      arrived = 0;
      register.reset();
      return true;
    },
    'window-read'(): WindowReading {
      const now = performance.now();
      let outstanding = 0;
      let oldest = 0;
      for (const tab of tabs) {
        if (tab.since === 0) continue;
        outstanding++;
        oldest = Math.max(oldest, now - tab.since);
      }
      return {
        total: total.data(),
        post: post.data(),
        ok,
        errors,
        errorKinds,
        firstError,
        httpAnswers,
        outstanding,
        oldestOutstandingMs: oldest,
        unexpectedCloses,
        loopP99Ms: loop.percentile(99) / 1e6,
        loopMaxMs: loop.max / 1e6,
        maxQueue,
        // Holes (bins without a refresh) count as 0.
        arrivals: Array.from(arrivals, (n) => n ?? 0),
        arrivalBinMs: ARRIVAL_BIN_MS,
        left,
        arrived,
        register: register.data(),
        tabs: tabs.filter((t) => t.running).length,
        windowMs: now - windowStart,
      };
    },
  },
  () => {
    stopping = true;
    for (const tab of tabs) {
      stopTab(tab);
      tab.ws.terminate();
    }
    pool?.close();
  },
);
