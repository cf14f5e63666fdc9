/**
 * Delivery latency benchmark: with 10,000 registered WebSocket tabs, the time from `hub.deliver`
 * in the tabwire process to the frame arriving in the client process. Both sides read
 * CLOCK_MONOTONIC (process.hrtime), which Linux shares between processes, so no clock offset
 * enters the figures. See docs/benchmarks.md.
 */
import { join } from 'node:path';
import { freePort, startChild, type ChildServer } from './lib/processes/child.js';
import {
  CpuWindow,
  OTHER_CPU_LIMIT,
  expect,
  machineLine,
  openFilesLimit,
  ownCpu,
  requireOpenFiles,
  revision,
  versionOf,
  waitForQuiet,
  waitUntil,
} from './lib/common.js';
import { startWorker, type Worker } from './lib/processes/channel-worker.js';
import { fetchOnce } from './lib/load/load.js';
import { QuietPolicy } from './lib/measure/quiet.js';
import { inScratchDir } from './lib/measure/scratch-dir.js';
import { table } from './lib/measure/stats.js';
import type { BenchReport, Benchmark, BudgetCheck, Measurement } from './lib/measure/types.js';

const TABS = 10_000;
const EVENTS = 2_000;
const PER_SECOND = 500;
/** Uncounted events first, so the delivery path runs optimised when the counted ones go. */
const WARMUP_EVENTS = 500;
const OPEN_CONCURRENCY = 100;
const FD_MARGIN = 200;
/** The budget: p99 from hub.deliver to the client at most this, on loopback. */
const BUDGET_P99_MS = 10;
/** Re-runs of the delivery window allowed when other processes disturbed it. */
const MAX_RETRIES = 2;
const PREFIX = 'lat-';

interface Latency {
  count: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
  negative: number;
}

interface Run {
  latency: Latency;
  sent: number;
  sendMs: number;
  maxLateMs: number;
  otherPercent: number;
  serverCpuPercent: number;
  clientCpuPercent: number;
}

async function deliverRun(server: ChildServer, clients: Worker, count: number): Promise<Run> {
  await clients.call('latency-reset');
  const window = await CpuWindow.open([() => server.cpuMicros(), () => clients.cpuMicros(), ownCpu]);
  const r = await fetchOnce(server.port, 'POST', '/__bench/deliver-run', { prefix: PREFIX, tabs: TABS, count, perSecond: PER_SECOND });
  expect(r.status === 200, `deliver-run answered ${r.status}: ${r.body.toString().slice(0, 300)}`);
  const sent = JSON.parse(r.body.toString()) as { count: number; ms: number; maxLateMs: number };
  await waitUntil(async () => (await clients.call<number>('latency-count')) >= sent.count, 10_000, 50);
  const cpu = await window.close();
  const latency = await clients.call<Latency>('latency-result');
  return {
    latency,
    sent: sent.count,
    sendMs: sent.ms,
    maxLateMs: sent.maxLateMs,
    otherPercent: cpu.otherPercent,
    serverCpuPercent: cpu.cpuPercent[0]!,
    clientCpuPercent: cpu.cpuPercent[1]!,
  };
}

export const deliverLatency: Benchmark = {
  name: 'deliver-latency',
  description: `hub.deliver -> WebSocket frame at the client, ${TABS.toLocaleString('en-US')} connected tabs`,
  async run(): Promise<BenchReport> {
    return inScratchDir(async (dir) => {
      let server: ChildServer | undefined;
      let clients: Worker | undefined;
      try {
        const idle = await waitForQuiet();
        const port = await freePort();
        const args = { port, sqliteFile: join(dir, 'deliver-latency.sqlite'), pingTimeoutSeconds: 600 };
        server = await startChild('tabwire', new URL('./servers/channel-tabwire.ts', import.meta.url), [JSON.stringify(args)]);
        const s = server;
        requireOpenFiles(`tabwire server (pid ${s.pid})`, openFilesLimit(s.pid), TABS + FD_MARGIN);
        clients = await startWorker('ws clients', new URL('./servers/channel-ws-clients.ts', import.meta.url));
        const c = clients;
        requireOpenFiles(`client process (pid ${c.pid})`, c.openFilesLimit, TABS + FD_MARGIN);

        const opened = await c.call<{ opened: number; failed: number; firstError?: string; ms: number }>(
          'open',
          { url: `ws://127.0.0.1:${s.port}/ClientEventsWS`, prefix: PREFIX, from: 0, to: TABS, concurrency: OPEN_CONCURRENCY },
          120_000,
        );
        expect(opened.failed === 0, `${opened.failed} sockets failed to open, first: ${opened.firstError}`);
        const connected = async (): Promise<number> =>
          (JSON.parse((await fetchOnce(s.port, 'GET', '/__bench/stats')).body.toString()) as { hub: { connected: number } }).hub.connected;
        await waitUntil(async () => (await connected()) === TABS, 30_000, 100);
        const counted = await connected();
        expect(counted === TABS, `server counts ${counted} connected tabs, expected ${TABS}`);

        const warm = await deliverRun(s, c, WARMUP_EVENTS);
        expect(warm.latency.count === WARMUP_EVENTS, `warm-up: ${warm.latency.count} of ${WARMUP_EVENTS} events arrived`);

        const quiet = new QuietPolicy(OTHER_CPU_LIMIT, MAX_RETRIES);
        const { value: run, attempts } = await quiet.best(
          () => deliverRun(s, c, EVENTS),
          (r) => Math.max(0, r.otherPercent - OTHER_CPU_LIMIT),
        );
        const stats = await c.call<{ unexpectedCloses: number; received: Record<string, number> }>('stats');
        expect(run.latency.count === run.sent, `${run.latency.count} of ${run.sent} events arrived`);
        expect(run.latency.negative === 0, `${run.latency.negative} events arrived before they were sent: the clocks differ`);
        expect(stats.unexpectedCloses === 0, `${stats.unexpectedCloses} sockets were closed by the server`);

        const ms = (v: number): string => (v >= 10 ? v.toFixed(1) : v.toFixed(2));
        const other = `${run.otherPercent.toFixed(0)}%${run.otherPercent > OTHER_CPU_LIMIT ? ' !' : ''}`;
        const lat = run.latency;
        const budgets: BudgetCheck[] = [
          {
            name: `p99 hub.deliver -> client <= ${BUDGET_P99_MS} ms with ${TABS.toLocaleString('en-US')} tabs`,
            met: lat.p99 <= BUDGET_P99_MS,
            unreliable: run.otherPercent > OTHER_CPU_LIMIT ? `other processes used ${run.otherPercent.toFixed(0)}% of a core` : undefined,
            detail: `p99 ${ms(lat.p99)} ms (p50 ${ms(lat.p50)}, max ${ms(lat.max)}) over ${lat.count} events at ${PER_SECOND}/s`,
          },
        ];
        const measurement: Measurement = {
          key: 'deliver.latency',
          label: 'hub.deliver -> client frame',
          rate: (run.sent * 1000) / run.sendMs,
          unit: 'event',
          count: run.sent,
          windowMs: run.sendMs,
          cpuPercent: run.serverCpuPercent,
          clientCpuPercent: run.clientCpuPercent,
          otherCpuPercent: run.otherPercent,
          latencyMs: { p50: lat.p50, p99: lat.p99, max: lat.max },
          note: attempts > 1 ? `measured ${attempts}x because other processes were busy; kept the quietest` : undefined,
        };
        return {
          title: deliverLatency.description,
          context: [
            machineLine(),
            `tabwire: ${revision()}`,
            `libraries: ws ${versionOf('ws')}, fastify ${versionOf('fastify')}`,
            `server and clients in separate child processes on loopback; open-file limit here ${openFilesLimit()}`,
            `${TABS.toLocaleString('en-US')} tabs opened at ${Math.round((TABS * 1000) / opened.ms).toLocaleString('en-US')}/s and registered; ${WARMUP_EVENTS} uncounted events first`,
            `each event goes to a random tab; the server stamps process.hrtime (CLOCK_MONOTONIC) just before hub.deliver, the client reads it on receipt before parsing`,
            `idle check before the run: other processes used ${idle.toFixed(0)}% of a core`,
            ...(run.otherPercent > OTHER_CPU_LIMIT ? [`WARNING: other processes used ${run.otherPercent.toFixed(0)}% of a core during the measurement; rerun on a quiet machine.`] : []),
          ],
          sections: [
            {
              heading: `${run.sent.toLocaleString('en-US')} events at ${PER_SECOND}/s to random tabs of ${TABS.toLocaleString('en-US')} (latency in ms)`,
              lines: [
                ...table(
                  ['path', 'events', 'p50', 'p90', 'p99', 'max', 'mean', 'srv CPU', 'client CPU', 'other', 'sender late max'],
                  [
                    [
                      'hub.deliver -> MemoryBus -> ws.send -> client',
                      `${lat.count}/${run.sent}`,
                      ms(lat.p50),
                      ms(lat.p90),
                      ms(lat.p99),
                      ms(lat.max),
                      ms(lat.mean),
                      `${run.serverCpuPercent.toFixed(0)}%`,
                      `${run.clientCpuPercent.toFixed(0)}%`,
                      other,
                      `${ms(run.maxLateMs)} ms`,
                    ],
                  ],
                ),
                'sender late max: how far behind its schedule the paced sender fell at worst (timer delays in the server).',
                ...(measurement.note ? [measurement.note] : []),
              ],
            },
          ],
          measurements: [measurement],
          budgets,
        };
      } finally {
        await clients?.stop();
        await server?.stop();
      }
    });
  },
};
