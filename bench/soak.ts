/**
 * Soak: `npm run soak`. 10,000 waiting login pages refreshing their QR code every 2 s for 10
 * minutes against one tabwire node (the waiting-people rig: bench/lib/waiting/rig.ts), the
 * server's RSS printed every 30 s. Passes when RSS stays within 10 % after a 1-minute warm-up and
 * nothing failed; exits 1 otherwise. A bench script, not a test: it takes about 12 minutes and
 * wants a quiet machine. See docs/benchmarks.md#soak.
 *
 * SOAK_TABS and SOAK_MINUTES change the size and length (e.g. a short trial run);
 * BENCH_WAITING_MODE and BENCH_PIN work as in bench/waiting-people.ts.
 */
import { join } from 'node:path';
import { OTHER_CPU_LIMIT, machineLine, mib, revision, waitForQuiet } from './lib/common.js';
import { inScratchDir } from './lib/measure/scratch-dir.js';
import { table } from './lib/measure/stats.js';
import { QR_LIMIT_ENV, WaitingRig, serverCores, tasksetAvailable, type WindowResult } from './lib/waiting/rig.js';
import { waitingMode } from './waiting-people.js';

const TABS = Number(process.env.SOAK_TABS ?? 10_000);
const MINUTES = Number(process.env.SOAK_MINUTES ?? 10);
const PERIOD_MS = 2_000;
const SAMPLE_MS = 30_000;
/** Load before the soak's clock starts: first requests, JIT, the heap growing to its working size. */
const WARMUP_MS = 60_000;
/** The acceptance rule: RSS after warm-up stays within this (max − min) / min. */
const RSS_FLAT = 0.1;
const POOL = 96;

const fmt = (n: number): string => n.toLocaleString('en-US');
const ms = (v: number): string => (Number.isFinite(v) ? (v >= 100 ? v.toFixed(0) : v.toFixed(1)) : '-');

async function main(): Promise<number> {
  if (!Number.isInteger(TABS) || TABS < 1 || !(MINUTES > 0)) throw new Error('SOAK_TABS must be a positive integer and SOAK_MINUTES positive');
  const mode = waitingMode();
  const pin = process.env.BENCH_PIN !== 'off' && tasksetAvailable();
  return inScratchDir(async (dir) => {
    let rig: WaitingRig | undefined;
    try {
      console.log(`soak: ${fmt(TABS)} waiting pages, a new ${mode} code ${PERIOD_MS / 1000} s after each answer, ${MINUTES} min after ${WARMUP_MS / 1000} s of warm-up`);
      console.log(machineLine());
      console.log(`tabwire: ${revision()}`);
      const idle = await waitForQuiet();
      console.log(`idle check: other processes used ${idle.toFixed(0)}% of a core`);
      rig = await WaitingRig.start({ mode, periodMs: PERIOD_MS, poolSize: POOL, pin, serverCores: serverCores(), dir });
      if (TABS > rig.serverCapacity) throw new Error(`the server may hold ${rig.serverCapacity} tabs (open-file limit)`);
      const openMs = await rig.setTabs(TABS);
      console.log(`cores: ${pin ? rig.cpuSplit() : `not pinned (${rig.cpuSplit()})`}`);
      console.log(`service config: defaults, log silent; ${Object.entries(QR_LIMIT_ENV).map(([k, v]) => `${k}=${v}`).join(', ')}`);
      console.log(`${fmt(TABS)} tabs opened and registered in ${(openMs / 1000).toFixed(1)} s\n`);

      const header = ['t', 'phase', 'codes/s', 'p50 ms', 'p99 ms', 'max ms', 'errors', 'srv CPU', 'srv RSS', 'SQLite', 'load CPU', 'bunching', 'other'];
      const rows: string[][] = [];
      const samples: { at: number; r: WindowResult; warm: boolean }[] = [];
      const windows = Math.ceil((WARMUP_MS + MINUTES * 60_000) / SAMPLE_MS);
      for (let i = 0; i < windows; i++) {
        const r = await rig.measure(SAMPLE_MS);
        const at = (i + 1) * SAMPLE_MS;
        const warm = at <= WARMUP_MS;
        samples.push({ at, r, warm });
        const cells = [
          `${Math.floor(at / 60_000)}:${String((at / 1000) % 60).padStart(2, '0')}`,
          warm ? 'warm-up' : 'soak',
          fmt(Math.round(r.rate)),
          ms(r.p50),
          ms(r.p99),
          ms(r.max),
          String(r.errors + r.closes),
          `${r.serverCpuPercent.toFixed(0)}%`,
          mib(r.serverRss),
          mib(rig.databaseBytes()),
          `${r.clientCpuPercent.toFixed(0)}%`,
          Number.isFinite(r.bunching) ? r.bunching.toFixed(2) : '-',
          `${r.otherPercent.toFixed(0)}%${r.otherPercent > OTHER_CPU_LIMIT ? ' !' : ''}`,
        ];
        rows.push(cells);
        // Printed as it goes: a soak is watched.
        const lines = table(header, rows);
        if (i === 0) console.log(`${lines[0]}\n${lines[1]}`);
        console.log(lines[lines.length - 1]);
        if (r.errors + r.closes > 0) console.log(`  errors: ${JSON.stringify(r.errorKinds)}${r.closes > 0 ? `, ${r.closes} WebSockets closed by the server` : ''}; first: ${r.firstError}`);
      }
      const split = rig.cpuSplit();
      await rig.stop();
      rig = undefined;

      const soak = samples.filter((s) => !s.warm);
      const rss = soak.map((s) => s.r.serverRss);
      const min = Math.min(...rss);
      const max = Math.max(...rss);
      const spread = (max - min) / min;
      const errors = samples.reduce((s, x) => s + x.r.errors + x.r.closes, 0);
      const refreshes = soak.reduce((s, x) => s + x.r.refreshes, 0);
      const soakMs = soak.reduce((s, x) => s + x.r.windowMs, 0);
      const worstP99 = Math.max(...soak.map((s) => s.r.p99));
      const other = soak.reduce((s, x) => s + x.r.otherPercent * x.r.windowMs, 0) / soakMs;
      const flat = spread <= RSS_FLAT;
      console.log(`\ncores: ${split}`);
      console.log(`soak (${MINUTES} min after warm-up): ${fmt(refreshes)} codes, ${fmt(Math.round((refreshes * 1000) / soakMs))}/s; worst 30-s p99 ${ms(worstP99)} ms; other processes ${other.toFixed(0)}% of a core on average`);
      console.log(`[${flat ? 'MET' : 'NOT MET'}] server RSS flat within ${RSS_FLAT * 100} % after warm-up: ${mib(min)} .. ${mib(max)} = ${(spread * 100).toFixed(1)} % (first ${mib(rss[0]!)}, last ${mib(rss[rss.length - 1]!)})`);
      console.log(`[${errors === 0 ? 'MET' : 'NOT MET'}] 0 errors (warm-up included): ${errors}`);
      if (other > OTHER_CPU_LIMIT) console.log(`WARNING: other processes used ${other.toFixed(0)}% of a core on average; latency figures are disturbed (RSS much less)`);
      return flat && errors === 0 ? 0 : 1;
    } finally {
      await rig?.stop();
    }
  }, 'tabwire-soak-');
}

process.exitCode = await main();
