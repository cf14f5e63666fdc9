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
 * Commands (driven over IPC by bench/lib/processes/channel-worker.ts):
 *   setup        {port, mode, periodMs, pingMs, poolSize, prefix, localAddress?}
 *   open         {from, to, concurrency}: opens and registers tabs tabIdOf(prefix, i), i in [from, to)
 *   start        {}: every opened tab that is not refreshing yet starts; first requests spread evenly over periodMs
 *   drop         {count}: the last `count` tabs stop, send Unregister and close (1000), as a page that is left
 *   churn        {meanStayMs}: people come and go: each running tab leaves after a random stay (exponential,
 *                this mean; as `drop` does) and a new person's page takes its place at once (new WebSocket,
 *                session and tab id, Register, a QR request as the page loads); 0 stops it
 *   window-start {}: resets the counters and histograms
 *   window-read  {}: what happened since window-start (see WindowReading in waiting/readings.ts)
 *
 * Its parts, under bench/servers/waiting/: the shared state (state.ts), the pool (http-pool.ts) and the
 * requests (requests.ts), a tab's life (tabs.ts), its QR refreshes (refresh.ts), the churn (churn.ts)
 * and the window's readings (readings.ts). This file answers the commands.
 */
import { performance } from 'node:perf_hooks';
import WebSocket from 'ws';
import { serveWorker } from '../lib/processes/channel-worker.js';
import { lanes } from './lanes.js';
import { startPings } from './tab-pings.js';
import { churning, setChurn } from './waiting/churn.js';
import { Pool } from './waiting/http-pool.js';
import { readWindow, startWindow, type WindowReading } from './waiting/readings.js';
import { refresh } from './waiting/refresh.js';
import { assertSetup, state, type Setup } from './waiting/state.js';
import { closeLeftTab, openTab, stopTab, type Tab } from './waiting/tabs.js';

serveWorker(
  {
    setup(a: Setup) {
      if (state.setup) throw new Error('already set up');
      state.setup = a;
      state.origin = `http://127.0.0.1:${a.port}`;
      state.pool = new Pool(a.port, a.poolSize, a.localAddress);
      return true;
    },
    async open(a: { from: number; to: number; concurrency: number }) {
      const s = assertSetup();
      const started = performance.now();
      let failed = 0;
      let openError: string | undefined;
      const opened: Tab[] = [];
      await lanes(a.from, a.to, a.concurrency, async (n) => {
        try {
          const tab = await openTab(s, n);
          opened.push(tab);
          startPings(tab, s.pingMs);
        } catch (err) {
          failed++;
          openError ??= (err as Error).message;
        }
      });
      for (const tab of opened) tab.slot = state.tabs.push(tab) - 1;
      return { opened: opened.length, failed, firstError: openError, ms: performance.now() - started, tabs: state.tabs.length };
    },
    start() {
      const s = assertSetup();
      const fresh = state.tabs.filter((t) => !t.running && !t.leaving && t.ws.readyState === WebSocket.OPEN);
      // Evenly over one period: the pages of people who arrived at different moments.
      fresh.forEach((tab, k) => {
        tab.running = true;
        tab.refresh = setTimeout(refresh, (k / fresh.length) * s.periodMs, tab);
      });
      return { started: fresh.length };
    },
    async drop(a: { count: number }) {
      if (churning()) throw new Error('stop the churn before dropping tabs');
      const leaving = state.tabs.splice(Math.max(0, state.tabs.length - a.count));
      await Promise.all(
        leaving.map((tab) => {
          stopTab(tab);
          return closeLeftTab(tab);
        }),
      );
      return { tabs: state.tabs.length };
    },
    churn(a: { meanStayMs: number }) {
      setChurn(a.meanStayMs);
      return true;
    },
    'window-start'() {
      startWindow();
      return true;
    },
    'window-read'(): WindowReading {
      return readWindow();
    },
  },
  () => {
    state.stopping = true;
    for (const tab of state.tabs) {
      stopTab(tab);
      tab.ws.terminate();
    }
    state.pool?.close();
  },
);
