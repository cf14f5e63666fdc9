/**
 * Channel memory benchmark: resident memory per idle registered WebSocket tab in tabwire, next to
 * the same number of bare `ws` connections to a bare `ws` server, in the same run. Servers and
 * clients run in separate child processes (one process may hold only ~20,000 open files).
 * See docs/benchmarks.md.
 */
import { join } from 'node:path';
import { freePort, startChild, type ChildServer } from './lib/processes/child.js';
import {
  CpuWindow,
  OTHER_CPU_LIMIT,
  expect,
  kib,
  machineLine,
  mib,
  openFilesLimit,
  ownCpu,
  requireOpenFiles,
  revision,
  settledRss,
  versionOf,
  waitForQuiet,
  waitUntil,
} from './lib/common.js';
import { startWorker, type Worker } from './lib/processes/channel-worker.js';
import { fetchOnce } from './lib/load/load.js';
import { inScratchDir } from './lib/measure/scratch-dir.js';
import { formatRatio, table } from './lib/measure/stats.js';
import type { BenchReport, Benchmark, BudgetCheck, Measurement } from './lib/measure/types.js';

/** Tab counts measured, ascending; the last one decides the budget. */
const STEPS = [1_000, 5_000, 15_000] as const;
/** Sockets each process may need beyond the tabs (SQLite, IPC, listen socket, stdio ...). */
const FD_MARGIN = 200;
/** WebSocket handshakes in flight while tabs are opened. */
const OPEN_CONCURRENCY = 100;
/**
 * Tabs opened, registered, unregistered and closed before the 0-tab reading, so one-off growth
 * (lazy first-use allocations, V8's young generation and malloc arenas growing under the first
 * burst of connections) is in the baseline instead of being charged to the first step's tabs.
 */
const WARMUP_TABS = 200;
/** The issue's budget: tabwire's memory per tab at most this multiple of a bare ws connection's. */
const BUDGET_RATIO = 1.3;

interface Point {
  tabs: number;
  rss: number;
  heapUsed: number;
  external: number;
}

interface Series {
  name: string;
  points: Point[];
  /** Tabs opened per second while ramping to the largest count. */
  openRate: number;
  otherPercent: number;
  serverCpuPercent: number;
  clientCpuPercent: number;
}

/** Opens tabs up to each step, waits until the server counts them all registered, then reads its settled RSS. */
async function ramp(name: string, server: ChildServer, registered: () => Promise<number>, wsPath: string, prefix: string): Promise<Series> {
  const max = STEPS[STEPS.length - 1]!;
  requireOpenFiles(`${name} server (pid ${server.pid})`, openFilesLimit(server.pid), max + FD_MARGIN);
  let clients: Worker | undefined;
  try {
    clients = await startWorker(`${name} ws clients`, new URL('./servers/channel-ws-clients.ts', import.meta.url));
    requireOpenFiles(`${name} client process (pid ${clients.pid})`, clients.openFilesLimit, max + FD_MARGIN);
    const url = `ws://127.0.0.1:${server.port}${wsPath}`;
    await clients.call('warmup', { url, prefix: `${prefix}warm-`, count: WARMUP_TABS });
    expect(await waitUntil(async () => (await registered()) === 0, 10_000), `${name}: warm-up tabs still counted after they closed`);

    const zero = await settledRss(server);
    const points: Point[] = [{ tabs: 0, rss: zero.rss, heapUsed: zero.heapUsed, external: zero.external }];
    const client = clients;
    const window = await CpuWindow.open([() => server.cpuMicros(), () => client.cpuMicros(), ownCpu]);
    let openedMs = 0;
    let from = 0;
    for (const tabs of STEPS) {
      const opened = await clients.call<{ opened: number; failed: number; firstError?: string; ms: number }>(
        'open',
        { url, prefix, from, to: tabs, concurrency: OPEN_CONCURRENCY },
        120_000,
      );
      openedMs += opened.ms;
      expect(opened.failed === 0, `${name}: ${opened.failed} sockets failed to open, first: ${opened.firstError}`);
      from = tabs;
      const closedByServer = async (): Promise<number> => (await client.call<{ unexpectedCloses: number }>('stats')).unexpectedCloses;
      await waitUntil(async () => (await registered()) === tabs || (await closedByServer()) > 0, 30_000, 100);
      const closed = await closedByServer();
      expect(closed === 0, `${name}: ${closed} sockets were closed by the server`);
      const counted = await registered();
      expect(counted === tabs, `${name}: server counts ${counted} registered tabs, expected ${tabs}`);
      const settled = await settledRss(server);
      points.push({ tabs, rss: settled.rss, heapUsed: settled.heapUsed, external: settled.external });
    }
    const cpu = await window.close();
    return {
      name,
      points,
      openRate: (max * 1000) / openedMs,
      otherPercent: cpu.otherPercent,
      serverCpuPercent: cpu.cpuPercent[0]!,
      clientCpuPercent: cpu.cpuPercent[1]!,
    };
  } finally {
    await clients?.stop();
  }
}

async function bare(): Promise<Series> {
  let server: ChildServer | undefined;
  try {
    server = await startChild('bare ws', new URL('./servers/channel-bare-ws.ts', import.meta.url), [String(await freePort())], { nodeArgs: ['--expose-gc'] });
    const s = server;
    const registered = async (): Promise<number> => (JSON.parse((await fetchOnce(s.port, 'GET', '/__bench/stats')).body.toString()) as { registered: number }).registered;
    return await ramp('bare ws', s, registered, '/', 'bare-');
  } finally {
    await server?.stop();
  }
}

async function tabwire(dir: string): Promise<Series> {
  let server: ChildServer | undefined;
  try {
    const port = await freePort();
    // pingTimeoutSeconds at its maximum: idle tabs send no Ping during the run.
    const args = { port, sqliteFile: join(dir, 'channel-memory.sqlite'), pingTimeoutSeconds: 600 };
    server = await startChild('tabwire', new URL('./servers/channel-tabwire.ts', import.meta.url), [JSON.stringify(args)], { nodeArgs: ['--expose-gc'] });
    const s = server;
    const registered = async (): Promise<number> =>
      (JSON.parse((await fetchOnce(s.port, 'GET', '/__bench/stats')).body.toString()) as { hub: { connected: number } }).hub.connected;
    return await ramp('tabwire', s, registered, '/ClientEventsWS', 'tab-');
  } finally {
    await server?.stop();
  }
}

const perTab = (s: Series, tabs: number): number => {
  const zero = s.points[0]!;
  const at = s.points.find((p) => p.tabs === tabs)!;
  return (at.rss - zero.rss) / tabs;
};
const heapPerTab = (s: Series, tabs: number): number => {
  const zero = s.points[0]!;
  const at = s.points.find((p) => p.tabs === tabs)!;
  return (at.heapUsed + at.external - zero.heapUsed - zero.external) / tabs;
};

export const channelMemory: Benchmark = {
  name: 'channel-memory',
  description: 'RSS per idle registered WebSocket tab: tabwire vs bare ws connections',
  async run(): Promise<BenchReport> {
    return inScratchDir(async (dir) => {
      const idle = await waitForQuiet();
      const bareSeries = await bare();
      const tabwireSeries = await tabwire(dir);

      const rows = STEPS.map((tabs) => {
        const t = perTab(tabwireSeries, tabs);
        const b = perTab(bareSeries, tabs);
        const tw = tabwireSeries.points.find((p) => p.tabs === tabs)!;
        const bw = bareSeries.points.find((p) => p.tabs === tabs)!;
        return [
          tabs.toLocaleString('en-US'),
          mib(tw.rss),
          kib(t),
          kib(heapPerTab(tabwireSeries, tabs)),
          mib(bw.rss),
          kib(b),
          kib(heapPerTab(bareSeries, tabs)),
          `${(t / b).toFixed(2)}x`,
        ];
      });
      const zeroRow = [
        '0',
        mib(tabwireSeries.points[0]!.rss),
        '',
        '',
        mib(bareSeries.points[0]!.rss),
        '',
        '',
        '',
      ];
      const max = STEPS[STEPS.length - 1]!;
      // The slope between the two largest steps: per-tab cost with every fixed cost left out.
      const prev = STEPS[STEPS.length - 2]!;
      const slope = (s: Series): number =>
        (s.points.find((p) => p.tabs === max)!.rss - s.points.find((p) => p.tabs === prev)!.rss) / (max - prev);
      const slopeRow = [
        `${prev / 1000}k->${max / 1000}k`,
        '',
        kib(slope(tabwireSeries)),
        '',
        '',
        kib(slope(bareSeries)),
        '',
        `${(slope(tabwireSeries) / slope(bareSeries)).toFixed(2)}x`,
      ];
      const t = perTab(tabwireSeries, max);
      const b = perTab(bareSeries, max);
      const series = [bareSeries, tabwireSeries];
      const disturbed = series.filter((s) => s.otherPercent > OTHER_CPU_LIMIT);
      const budgets: BudgetCheck[] = [
        {
          name: `tabwire memory per idle tab <= ${BUDGET_RATIO}x a bare ws connection (at ${max.toLocaleString('en-US')})`,
          met: t <= BUDGET_RATIO * b,
          detail: `${kib(t)} per tab vs ${kib(b)} per bare connection = ${(t / b).toFixed(2)}x (${formatRatio(t / b)}); allowed ${kib(BUDGET_RATIO * b)}${
            t > BUDGET_RATIO * b ? `, over by ${kib(t - BUDGET_RATIO * b)} per tab` : ''
          }`,
        },
      ];
      const measurements: Measurement[] = series.flatMap((s) =>
        STEPS.map((tabs) => ({
          key: `${s.name === 'tabwire' ? 'tabwire' : 'bare'}.bytesPerTab.${tabs}`,
          label: `${s.name} RSS per tab at ${tabs}`,
          rate: perTab(s, tabs),
          unit: 'byte/tab',
          count: tabs,
          windowMs: 0,
          otherCpuPercent: s.otherPercent,
        })),
      );
      const context = [
        machineLine(),
        `tabwire: ${revision()}`,
        `libraries: ws ${versionOf('ws')}, fastify ${versionOf('fastify')}`,
        `servers and clients in separate child processes on loopback; open-file limit here ${openFilesLimit()}; ${WARMUP_TABS} tabs opened and closed before the 0-tab reading`,
        `per tab = (settled RSS at N - settled RSS at 0) / N; settled = full GCs in the server (--expose-gc), VmRSS from /proc`,
        `idle check before the run: other processes used ${idle.toFixed(0)}% of a core`,
        ...disturbed.map((s) => `WARNING: other processes used ${s.otherPercent.toFixed(0)}% of a core while ${s.name} ramped up (memory figures are less affected than rates)`),
      ];
      return {
        title: channelMemory.description,
        context,
        sections: [
          {
            heading: 'Idle registered tabs (tabwire: Register over /ClientEventsWS; bare: ws server, one frame per socket)',
            lines: [
              ...table(['tabs', 'tabwire RSS', 'tabwire/tab', '(heap+ext/tab)', 'bare RSS', 'bare/conn', '(heap+ext/conn)', 'ratio'], [zeroRow, ...rows, slopeRow]),
              'ratio: tabwire bytes per tab / bare ws bytes per connection. (heap+ext): V8 heapUsed + external growth per tab, for context.',
              `${prev / 1000}k->${max / 1000}k: RSS growth between the two largest steps per added tab (fixed costs left out), for context.`,
            ],
          },
          {
            heading: 'Ramp-up (all steps)',
            lines: table(
              ['server', 'tabs opened/s', 'srv CPU', 'client CPU', 'other'],
              series.map((s) => [
                s.name,
                Math.round(s.openRate).toLocaleString('en-US'),
                `${s.serverCpuPercent.toFixed(0)}%`,
                `${s.clientCpuPercent.toFixed(0)}%`,
                `${s.otherPercent.toFixed(0)}%${s.otherPercent > OTHER_CPU_LIMIT ? ' !' : ''}`,
              ]),
            ),
          },
        ],
        measurements,
        budgets,
      };
    });
  },
};
