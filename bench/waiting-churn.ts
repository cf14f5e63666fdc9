/**
 * People coming and going on a fresh node: N waiting pages (12,000 by default, BENCH_CHURN_TABS), held for
 * 60 s as they are, then 60 s while people come and go (each page leaves after an exponential stay of 120 s
 * on average, `Unregister` and close, and a new person's page takes its place: new WebSocket, session and tab
 * id, `Register`, a code at once). The waiting-people benchmark measures the same churn at its end, after
 * ~8 minutes of ramp and holds (a large SQLite file, a large heap); this one starts from an empty node, so
 * the figure is the arrivals' own: first the churn's onset (20 s), then its steady state (60 s). Not a budget. Same rig, cores and load as waiting-people
 * (bench/lib/waiting/rig.ts). See docs/benchmarks.md#waiting-churn.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { machineLine, mib, revision, waitForQuiet } from './lib/common.js';
import { inScratchDir } from './lib/measure/scratch-dir.js';
import { table } from './lib/measure/stats.js';
import type { BenchReport, Benchmark, Measurement } from './lib/measure/types.js';
import { fmt, header, measurementOf, ms, row } from './lib/waiting/report.js';
import { WaitingRig, holds, serverCores, tasksetAvailable, type WindowResult } from './lib/waiting/rig.js';
import { CHURN_STAY_MS, P99_LIMIT_MS, PERIOD_MS, POOL, waitingMode } from './waiting-people.js';

const TABS = Number(process.env.BENCH_CHURN_TABS ?? 12_000);
/** New tabs' first requests and V8's optimisation settle before anything is measured. */
const WARMUP_MS = 15_000;
const WINDOW_MS = 60_000;
/** Arrivals reach their rate, and the first departures have happened, before the churn's first window. */
const CHURN_SETTLE_MS = 10_000;
/**
 * The churn's first window: a node that saw no arrivals for a while has a transient when they start (10-s
 * slices of the load had p99 ~200 ms in the first 10-20 s, then mostly 10-60 ms): measured on its own, so
 * the 60-s window after it is the steady state of people coming and going.
 */
const ONSET_MS = 20_000;

/** The benchmark: N pages held, then the same N with people coming and going, on a node that started empty. */
export const waitingChurn: Benchmark = {
  name: 'waiting-churn',
  description: `people coming and going among ${fmt(TABS)} waiting pages on a fresh node (mean stay ${CHURN_STAY_MS / 1000} s)`,
  async run(): Promise<BenchReport> {
    if (!Number.isInteger(TABS) || TABS < 100) throw new Error(`BENCH_CHURN_TABS must be an integer of at least 100, not ${process.env.BENCH_CHURN_TABS}`);
    const mode = waitingMode();
    const pin = process.env.BENCH_PIN !== 'off' && tasksetAvailable();
    return inScratchDir(async (dir) => {
      let rig: WaitingRig | undefined;
      try {
        const idle = await waitForQuiet();
        rig = await WaitingRig.start({ mode, periodMs: PERIOD_MS, poolSize: POOL, pin, serverCores: serverCores(), dir });
        const openMs = await rig.setTabs(TABS);
        await sleep(WARMUP_MS);
        const rows: string[][] = [];
        const measure = async (label: string): Promise<WindowResult> => {
          const r = await rig!.measure(WINDOW_MS);
          rows.push(row(label, r, mode, holds(r, P99_LIMIT_MS) ? 'held' : 'NOT held'));
          console.log(`  ${label}: ${fmt(TABS)} tabs, p99 ${ms(r.p99)} ms, ${r.errors + r.closes} errors, server CPU ${r.serverCpuPercent.toFixed(0)}%`);
          return r;
        };
        const held = await measure('held 60 s');
        await rig.churn(CHURN_STAY_MS);
        await sleep(CHURN_SETTLE_MS);
        const onset = await rig.measure(ONSET_MS);
        rows.push(row('churn onset', onset, mode, holds(onset, P99_LIMIT_MS) ? 'held' : 'NOT held'));
        console.log(`  churn onset (${CHURN_SETTLE_MS / 1000}-${(CHURN_SETTLE_MS + ONSET_MS) / 1000} s): p99 ${ms(onset.p99)} ms`);
        const churn = await measure('churn 60 s');
        await rig.churn(0);
        const split = rig.cpuSplit();
        const dbBytes = rig.databaseBytes();
        await rig.stop();
        rig = undefined;

        // Each person who comes and goes: the server CPU above the held window's, per arrival.
        const extraCpuMsPerPerson = ((churn.serverCpuPercent - held.serverCpuPercent) * 10) / churn.arrivedPerSecond;
        const measurements: Measurement[] = [
          measurementOf('waitingChurn.held', `${fmt(TABS)} tabs held, nobody leaving`, held, `${TABS} tabs`),
          measurementOf('waitingChurn.onset', `${fmt(TABS)} tabs, the first ${ONSET_MS / 1000} s of people coming and going`, onset, `${onset.arrivedPerSecond.toFixed(0)} new pages/s`),
          measurementOf('waitingChurn.churn', `${fmt(TABS)} tabs, people coming and going`, churn, `${churn.arrivedPerSecond.toFixed(0)} new pages/s, Register p99 ${ms(churn.registerP99)} ms`),
        ];
        return {
          title: waitingChurn.description,
          context: [
            machineLine(),
            `tabwire: ${revision()}; cores: ${pin ? split : `not pinned (${split})`}; mode ${mode}; keep-alive pool of ${POOL} connections per load process`,
            `${fmt(TABS)} tabs opened in ${(openMs / 1000).toFixed(1)} s on an empty node, ${WARMUP_MS / 1000} s of load, then ${WINDOW_MS / 1000} s held; people start coming and going, and ${CHURN_SETTLE_MS / 1000} s later the churn's onset is measured for ${ONSET_MS / 1000} s, then its steady state for ${WINDOW_MS / 1000} s; SQLite file ${mib(dbBytes)} at the end`,
            `idle check before the run: other processes used ${idle.toFixed(0)}% of a core`,
          ],
          sections: [
            {
              heading: 'Windows',
              lines: [
                ...table(header(mode), rows),
                `churn: ${churn.leftPerSecond.toFixed(0)} pages left and ${churn.arrivedPerSecond.toFixed(0)} arrived per second; a new page's handshake + Register p99 ${ms(churn.registerP99)} ms; server CPU per person who came and went, above the held window: ${extraCpuMsPerPerson.toFixed(2)} ms`,
              ],
            },
          ],
          measurements,
          budgets: [],
        };
      } finally {
        await rig?.stop();
      }
    });
  },
};
