/**
 * Long-poll memory benchmark: 5,000 concurrently held `POST /ClientEvents` polls
 * (longPollHoldSeconds 60), the tabwire process's resident memory per held poll, a check that
 * every poll is really held, then the same after each is released by one event. Server and
 * clients in separate child processes. See docs/benchmarks.md.
 */
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
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
import { table } from './lib/measure/stats.js';
import type { BenchReport, Benchmark, Measurement } from './lib/measure/types.js';

const POLLS = 5_000;
const HOLD_SECONDS = 60;
const WARMUP_TABS = 200;
const CONCURRENCY = 100;
const FD_MARGIN = 200;
/** After the server counts every poll attached, polls must stay unanswered at least this long. */
const HELD_CHECK_MS = 1_500;
const PREFIX = 'lp-';

interface HeldStatus {
  sent: number;
  answered: number;
  withEvent: number;
  nop: number;
  otherStatus: number;
  errors: number;
  firstError?: string;
  firstOther?: string;
}

type Settled = Awaited<ReturnType<typeof settledRss>>;

const startClients = (): Promise<Worker> => startWorker('long-poll clients', new URL('./servers/channel-longpoll-clients.ts', import.meta.url));

interface Cycle {
  firstMs: number;
  heldStatus: HeldStatus;
  released: HeldStatus;
  releaseMs: number;
  /** Open files of the server with the tabs idle (between polls) and with every poll held. */
  serverFiles: { idle: number; held: number };
}

/** One tab set through first poll, held poll and release; the worker keeps its sockets afterwards. */
async function pollCycle(server: ChildServer, worker: Worker, prefix: string, count: number, between: { idle?: () => Promise<void>; held?: () => Promise<void> } = {}): Promise<Cycle> {
  requireOpenFiles(`client process (pid ${worker.pid})`, worker.openFilesLimit, count + FD_MARGIN);
  const stats = async (): Promise<{ hub: { connected: number }; openFiles: number }> =>
    JSON.parse((await fetchOnce(server.port, 'GET', '/__bench/stats')).body.toString()) as { hub: { connected: number }; openFiles: number };
  const connected = async (): Promise<number> => (await stats()).hub.connected;
  const status = (): Promise<HeldStatus> => worker.call<HeldStatus>('status');

  const first = await worker.call<{ ok: number; failed: number; firstError?: string; ms: number }>('first', { port: server.port, prefix, count, concurrency: CONCURRENCY }, 120_000);
  expect(first.failed === 0 && first.ok === count, `${first.failed} first polls failed, first: ${first.firstError}`);
  // The first poll of a new session is answered at once: nothing is held now.
  expect(await waitUntil(async () => (await connected()) === 0, 5_000), 'polls still attached after the first (immediate) answers');
  const idleFiles = (await stats()).openFiles;
  await between.idle?.();

  await worker.call('hold');
  const attached = await waitUntil(async () => (await connected()) === count, 30_000, 100);
  expect(attached, `the server holds ${await connected()} polls, expected ${count}`);
  await sleep(HELD_CHECK_MS);
  let heldStatus = await status();
  expect(heldStatus.answered === 0 && heldStatus.errors === 0, `${heldStatus.answered} held polls answered early (${heldStatus.firstOther ?? ''}), ${heldStatus.errors} errors (${heldStatus.firstError ?? ''})`);
  const heldFiles = (await stats()).openFiles;
  await between.held?.();
  heldStatus = await status();
  expect(heldStatus.answered === 0 && heldStatus.errors === 0, `${heldStatus.answered} held polls answered before the release (${heldStatus.firstOther ?? ''})`);
  expect((await connected()) === count, 'a held poll went away before the release');

  const t0 = performance.now();
  const r = await fetchOnce(server.port, 'POST', '/__bench/deliver-all', { prefix, tabs: count });
  expect(r.status === 200, `deliver-all answered ${r.status}`);
  const done = await waitUntil(async () => (await status()).answered === count, 20_000, 50);
  const releaseMs = performance.now() - t0;
  const released = await status();
  expect(done && released.withEvent === count, `after the release ${released.withEvent} of ${count} polls got their event (${released.nop} NOP, ${released.otherStatus} other: ${released.firstOther ?? ''}; ${released.errors} errors)`);
  return { firstMs: first.ms, heldStatus, released, releaseMs, serverFiles: { idle: idleFiles, held: heldFiles } };
}

export const longpollMemory: Benchmark = {
  name: 'longpoll-memory',
  description: `RSS per held long-poll, ${POLLS.toLocaleString('en-US')} concurrent polls held ${HOLD_SECONDS} s`,
  async run(): Promise<BenchReport> {
    return inScratchDir(async (dir) => {
      let server: ChildServer | undefined;
      let main: Worker | undefined;
      try {
        const idle = await waitForQuiet();
        const port = await freePort();
        // tabIdleSeconds long: tabs between polls must not be forgotten while the run reads memory.
        const args = { port, sqliteFile: join(dir, 'longpoll-memory.sqlite'), longPollHoldSeconds: HOLD_SECONDS, tabIdleSeconds: 600 };
        server = await startChild('tabwire', new URL('./servers/channel-tabwire.ts', import.meta.url), [JSON.stringify(args)], { nodeArgs: ['--expose-gc'] });
        const s = server;
        requireOpenFiles(`tabwire server (pid ${s.pid})`, openFilesLimit(s.pid), POLLS + FD_MARGIN);

        // Warm-up: a small set through the whole cycle, uncounted (lazy first-use allocations, JIT).
        const warmClients = await startClients();
        try {
          await pollCycle(s, warmClients, `${PREFIX}warm-`, WARMUP_TABS);
        } finally {
          await warmClients.stop();
        }
        main = await startClients();
        const clients = main;

        const points: Record<'zero' | 'idle' | 'held' | 'released', Settled | undefined> = { zero: undefined, idle: undefined, held: undefined, released: undefined };
        points.zero = await settledRss(s);
        const window = await CpuWindow.open([() => s.cpuMicros(), () => clients.cpuMicros(), ownCpu]);
        const cycle = await pollCycle(s, clients, PREFIX, POLLS, {
          idle: async () => {
            points.idle = await settledRss(s);
          },
          held: async () => {
            points.held = await settledRss(s);
          },
        });
        points.released = await settledRss(s);
        const cpu = await window.close();
        const { zero, idle: idleTabs, held, released } = points as Record<keyof typeof points, Settled>;

        const per = (a: Settled, b: Settled): number => (b.rss - a.rss) / POLLS;
        const heapPer = (a: Settled, b: Settled): number => (b.heapUsed + b.external - a.heapUsed - a.external) / POLLS;
        const row = (label: string, at: Settled, vsZero: boolean): string[] => [
          label,
          mib(at.rss),
          vsZero ? kib(per(zero, at)) : '',
          vsZero ? kib(heapPer(zero, at)) : '',
        ];
        const perHeld = per(zero, held);
        const measurements: Measurement[] = [
          { key: 'longpoll.bytesPerHeldPoll', label: 'RSS per held poll', rate: perHeld, unit: 'byte/poll', count: POLLS, windowMs: 0, otherCpuPercent: cpu.otherPercent },
          { key: 'longpoll.bytesPerReleasedTab', label: 'RSS per tab after release', rate: per(zero, released), unit: 'byte/tab', count: POLLS, windowMs: 0, otherCpuPercent: cpu.otherPercent },
        ];
        const disturbed = cpu.otherPercent > OTHER_CPU_LIMIT;
        return {
          title: longpollMemory.description,
          context: [
            machineLine(),
            `tabwire: ${revision()}`,
            `libraries: fastify ${versionOf('fastify')}, better-sqlite3 ${versionOf('better-sqlite3')}`,
            `server and clients (node:http, one keep-alive connection per tab) in separate child processes on loopback; open-file limit here ${openFilesLimit()}`,
            `longPollHoldSeconds ${HOLD_SECONDS}; ${WARMUP_TABS} tabs polled, held and released before the 0 reading; per poll = (settled RSS - settled RSS at 0) / ${POLLS}`,
            `idle check before the run: other processes used ${idle.toFixed(0)}% of a core; during the run: ${cpu.otherPercent.toFixed(0)}%`,
            ...(disturbed ? [`WARNING: other processes used ${cpu.otherPercent.toFixed(0)}% of a core during the run (memory figures are less affected than rates)`] : []),
          ],
          sections: [
            {
              heading: `${POLLS.toLocaleString('en-US')} tabs on long-poll (tabwire server process, settled after full GCs)`,
              lines: [
                ...table(
                  ['state', 'RSS', 'RSS per tab', '(heap+ext per tab)'],
                  [
                    row('0: before any tab (after warm-up)', zero, false),
                    row('tabs registered, first poll answered, keep-alive sockets idle', idleTabs, true),
                    row(`${POLLS.toLocaleString('en-US')} polls held`, held, true),
                    row('after release (each poll answered with one event)', released, true),
                  ],
                ),
                `holding a poll over an idle keep-alive connection of a registered tab: ${kib(per(idleTabs, held))} RSS, ${kib(heapPer(idleTabs, held))} heap+ext per poll`,
              ],
            },
            {
              heading: 'Checks',
              lines: [
                `first polls: ${POLLS.toLocaleString('en-US')} answered at once with CheckServerInstance and a tabwire_sid cookie, ${Math.round((POLLS * 1000) / cycle.firstMs).toLocaleString('en-US')}/s`,
                `held: server attached all ${POLLS.toLocaleString('en-US')}; 0 answered after ${HELD_CHECK_MS} ms and still 0 after the memory reading (${cycle.heldStatus.sent} sent)`,
                `release: deliver-all answered all ${cycle.released.withEvent.toLocaleString('en-US')} held polls with their event in ${Math.round(cycle.releaseMs)} ms (${cycle.released.nop} NOP, ${cycle.released.otherStatus} other)`,
                `server open files: ${cycle.serverFiles.idle.toLocaleString('en-US')} with the tabs idle between polls, ${cycle.serverFiles.held.toLocaleString('en-US')} with every poll held`,
                `CPU over the run (${(cpu.ms / 1000).toFixed(1)} s, memory readings included): server ${cpu.cpuPercent[0]!.toFixed(0)}%, clients ${cpu.cpuPercent[1]!.toFixed(0)}% of a core`,
              ],
            },
          ],
          measurements,
          budgets: [],
        };
      } finally {
        await main?.stop();
        await server?.stop();
      }
    });
  },
};
