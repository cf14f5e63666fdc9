/**
 * `npm run bench [-- <name>...] [-- --strict]`: runs the benchmark modules one after another and
 * prints their tables. With names, only those run. With --strict, a budget that is missed or could
 * not be measured reliably (busy or drifting machine) exits 1.
 * To add a benchmark, write a module exporting a `Benchmark` (bench/lib/measure/types.ts) and list it below.
 */
import { performance } from 'node:perf_hooks';
import type { BenchReport, Benchmark, BudgetCheck } from './lib/measure/types.js';
import { callbacks } from './callbacks.js';
import { channelMemory } from './channel-memory.js';
import { cluster } from './cluster.js';
import { deliverLatency } from './deliver-latency.js';
import { longpollMemory } from './longpoll-memory.js';
import { oidcLogin } from './oidc-login.js';
import { qrEncoders } from './qr-encoders.js';
import { qrIssuance } from './qr-issuance.js';
import { qrRefresh } from './qr-refresh.js';
import { storeWrites } from './store-writes.js';
import { waitingChurn } from './waiting-churn.js';
import { waitingPeople } from './waiting-people.js';
import { xmppRouter } from './xmpp-router.js';
import { xmppThroughput } from './xmpp-throughput.js';

const BENCHMARKS: readonly Benchmark[] = [qrEncoders, qrIssuance, qrRefresh, channelMemory, deliverLatency, longpollMemory, callbacks, xmppRouter, xmppThroughput, waitingPeople, waitingChurn, storeWrites, cluster, oidcLogin];

const verdictOf = (b: BudgetCheck): string => `${b.met ? 'MET' : 'NOT MET'}${b.unreliable ? '?' : ''}`;

function print(report: BenchReport, seconds: number): void {
  console.log(`\n=== ${report.title} (${seconds.toFixed(1)} s) ===`);
  for (const line of report.context) console.log(line);
  for (const section of report.sections) {
    console.log(`\n${section.heading}`);
    for (const line of section.lines) console.log(`  ${line}`);
  }
  if (report.budgets.length > 0) {
    console.log('\nBudgets (same run):');
    for (const b of report.budgets) {
      console.log(`  [${verdictOf(b)}] ${b.name}: ${b.detail}${b.unreliable ? ` (UNRELIABLE: ${b.unreliable})` : ''}`);
    }
  }
}

async function main(): Promise<number> {
  const args = process.argv.slice(2);
  const strict = args.includes('--strict');
  const names = args.filter((a) => !a.startsWith('--'));
  const unknown = names.filter((n) => !BENCHMARKS.some((b) => b.name === n));
  if (unknown.length > 0) {
    console.error(`unknown benchmark(s): ${unknown.join(', ')}; known: ${BENCHMARKS.map((b) => b.name).join(', ')}`);
    return 2;
  }
  const selected = names.length === 0 ? BENCHMARKS : BENCHMARKS.filter((b) => names.includes(b.name));

  let missed = 0;
  let failed = 0;
  /** Every budget of the run, in order, for the summary at the end (each benchmark's own table is long). */
  const verdicts: { bench: string; budget?: BudgetCheck; failure?: string }[] = [];
  const t0 = performance.now();
  for (const benchmark of selected) {
    console.log(`running ${benchmark.name}: ${benchmark.description} ...`);
    const start = performance.now();
    try {
      const report = await benchmark.run();
      print(report, (performance.now() - start) / 1000);
      missed += report.budgets.filter((b) => !b.met || b.unreliable).length;
      for (const budget of report.budgets) verdicts.push({ bench: benchmark.name, budget });
    } catch (err) {
      failed++;
      console.error(`\n${benchmark.name} failed:`, err);
      verdicts.push({ bench: benchmark.name, failure: (err as Error).message?.split('\n')[0] ?? String(err) });
    }
  }
  console.log('\n=== Budgets of this run ===');
  for (const v of verdicts) {
    if (v.failure !== undefined) console.log(`  [FAILED] ${v.bench}: ${v.failure}`);
    else console.log(`  [${verdictOf(v.budget!)}] ${v.bench}: ${v.budget!.name}`);
  }
  // The soak (RSS flat over 10 minutes) is a script of its own: it takes ~12 minutes of a quiet machine.
  if (names.length === 0) console.log('  [not run here] soak: server RSS flat within 10% over 10 min at 10,000 waiting pages: `npm run soak`');
  console.log(`\n${selected.length} benchmark(s) in ${((performance.now() - t0) / 1000).toFixed(1)} s; ${failed} failed, ${missed} budget(s) not met or not reliably measured.`);
  if (failed > 0) return 1;
  return strict && missed > 0 ? 1 : 0;
}

process.exitCode = await main();
