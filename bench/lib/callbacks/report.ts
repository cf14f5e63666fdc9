/**
 * The report of the callbacks benchmark (bench/callbacks.ts): every round in a table, the medians and the
 * throughput budget, and the signature -> callback latency run (bench/callback-latency.ts) next to them.
 */
import { BUDGET_P99_MS, LOGIN_RATE, type LatencyReport } from '../../callback-latency.js';
import { OTHER_CPU_LIMIT, machineLine, revision, versionOf } from '../common.js';
import { BUDGET_SHARE, KINDS, N, PLAIN_CONCURRENCY, ROUNDS, WARMUP_PASSES, type Round } from './settings.js';
import { formatRate, formatRatio, median, table } from '../measure/stats.js';
import type { BenchReport, BudgetCheck, Measurement } from '../measure/types.js';

/** Everything a run hands to its report. */
export interface CallbacksRun {
  title: string;
  rounds: Round[];
  /** The latency run's report, or why it failed. */
  latency: LatencyReport | undefined;
  latencyError: string | undefined;
  /** The callback body every round sends, and the signing flow's sign path (for the context lines). */
  body: string;
  signPath: string;
  /** POSTs the receiver counted, and how many the rounds should have sent. */
  received: number;
  expected: number;
  idle: number;
}

/** The benchmark's report: context, the rounds table with medians, the latency section, both budgets. */
export function callbacksReport(run: CallbacksRun): BenchReport {
  const { title, rounds, latency, latencyError, body, signPath, received, expected, idle } = run;
  const of = (kind: Round['kind']): Round[] => {
    const all = rounds.filter((r) => r.kind === kind);
    const quiet = all.filter((r) => r.otherPercent <= OTHER_CPU_LIMIT);
    return quiet.length >= Math.ceil(ROUNDS / 2) ? quiet : all;
  };
  const plainRate = median(of('plain').map((r) => r.rate));
  const outboxRate = median(of('outbox').map((r) => r.rate));
  const storelessRate = median(of('storeless').map((r) => r.rate));
  const enqueueRate = median(of('enqueue').map((r) => r.rate));
  const share = outboxRate / plainRate;
  const errors = rounds.reduce((n, r) => n + r.errors, 0);
  const disturbed = rounds.filter((r) => r.otherPercent > OTHER_CPU_LIMIT);

  const fmt = (v: number): string => (v >= 10 ? v.toFixed(1) : v.toFixed(2));
  const label: Record<Round['kind'], string> = {
    plain: `plain undici POST, ${PLAIN_CONCURRENCY} in flight`,
    outbox: `outbox: settle + callback, ${PLAIN_CONCURRENCY} signatures in flight -> 2xx -> delivered`,
    storeless: 'the same, settle and delivered answered without the store',
    enqueue: 'outbox: deliverer.enqueue awaited one by one (earlier benchmark)',
  };
  const rows = rounds.map((r, i) => [
    `${label[r.kind]} (round ${Math.floor(i / KINDS.length) + 1})`,
    formatRate(r.rate),
    fmt(r.p50),
    fmt(r.p99),
    fmt(r.max),
    `${r.cpuPercent.toFixed(0)}%`,
    `${r.receiverCpuPercent.toFixed(0)}%`,
    `${r.otherPercent.toFixed(0)}%${r.otherPercent > OTHER_CPU_LIMIT ? ' !' : ''}`,
    String(r.errors),
  ]);
  const budgets: BudgetCheck[] = [
    {
      name: `outbox callbacks/s >= ${BUDGET_SHARE * 100}% of plain POSTs/s in the same run`,
      met: share >= BUDGET_SHARE,
      unreliable: disturbed.length > 0 ? `other processes used > ${OTHER_CPU_LIMIT}% of a core in ${disturbed.length} round(s)` : undefined,
      detail:
        `${formatRate(outboxRate)} callbacks/s = ${formatRatio(share)} of ${formatRate(plainRate)} POSTs/s (medians of ${ROUNDS} rounds of ${N.toLocaleString('en-US')}); ` +
        `without the store's writes ${formatRate(storelessRate)}/s = ${formatRatio(storelessRate / plainRate)}`,
    },
    latency?.budget ?? {
      name: `p99 signature -> callback received <= ${BUDGET_P99_MS} ms at ${LOGIN_RATE} logins/s`,
      met: false,
      unreliable: 'the latency run failed',
      detail: latencyError ?? 'not run',
    },
  ];
  const measurements: Measurement[] = [
    ...rounds.map((r, i) => ({
      key: `callbacks.${r.kind}.${Math.floor(i / KINDS.length)}`,
      label: r.kind === 'plain' ? 'plain POSTs' : `${r.kind} callbacks`,
      rate: r.rate,
      unit: r.kind === 'plain' ? 'req' : 'callback',
      count: r.count,
      windowMs: r.ms,
      cpuPercent: r.cpuPercent,
      otherCpuPercent: r.otherPercent,
      latencyMs: { p50: r.p50, p99: r.p99, max: r.max },
      errors: r.errors,
    })),
    ...(latency ? [latency.measurement] : []),
  ];
  return {
    title,
    context: [
      machineLine(),
      `tabwire: ${revision()}`,
      `libraries: undici ${versionOf('undici')}, better-sqlite3 ${versionOf('better-sqlite3')}, kysely ${versionOf('kysely')}`,
      `receiver: node:https in a child process, self-signed P-256 certificate for 127.0.0.1, trusted via callbackCaFile; callbackAllowedHosts ['127.0.0.1']`,
      `tabwire (buildApp, SQLite in a temp dir) and the plain client run in this process; body = the real callback of a signing flow (${Buffer.byteLength(body)} bytes, Standard Webhooks v1a + v1 signatures per outbox callback)`,
      `sanity: backend registered, QR issued for it, approved via POST ${signPath.replace(/[^/]+$/, '{code}')}/Dev; its callback was delivered before anything was timed`,
      `each round: ${N.toLocaleString('en-US')} POSTs / callbacks; an outbox round's codes are issued before it (uncounted); rate = count / (last delivered - first started)`,
      `receiver counted ${received.toLocaleString('en-US')} POSTs (expected ${expected.toLocaleString('en-US')}); retries or failures in the outbox: ${errors}`,
      `idle check before the run: other processes used ${idle.toFixed(0)}% of a core`,
      ...(disturbed.length > 0 ? [`WARNING: other processes used > ${OTHER_CPU_LIMIT}% of a core in ${disturbed.length} round(s) (marked !)`] : []),
      ...(latency?.context ?? []),
    ],
    sections: [
      {
        heading: `Rounds in turn (after ${WARMUP_PASSES} uncounted passes of ${N.toLocaleString('en-US')} of each kind); latency ms per callback from its start`,
        lines: [
          ...table(['path', 'per s', 'p50', 'p99', 'max', 'CPU here', 'receiver CPU', 'other', 'retries/errors'], rows),
          `medians: outbox ${formatRate(outboxRate)} callbacks/s, plain ${formatRate(plainRate)} POSTs/s -> ${formatRatio(share)}; ` +
            `storeless ${formatRate(storelessRate)}/s -> ${formatRatio(storelessRate / plainRate)}; enqueue one by one ${formatRate(enqueueRate)}/s -> ${formatRatio(enqueueRate / plainRate)}`,
          'storeless: the outbox rounds with the settlement and the delivered mark answered without SQLite: what signing, the POST and the',
          "deliverer's own work leave on this machine, the ceiling no store could lift.",
          'outbox latency is mostly queueing: a whole round is started at once and the deliverer sends 64 at a time.',
        ],
      },
      {
        heading: `Signature -> callback received at ${LOGIN_RATE} logins/s (real server, load and receiver in this process)`,
        lines: latency?.lines ?? [`failed: ${latencyError}`],
      },
    ],
    measurements,
    budgets,
  };
}
