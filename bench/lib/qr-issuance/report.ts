/**
 * The report of the QR issuance benchmark (bench/qr-issuance.ts): its tables (in-process rows, HTTP rows,
 * where a request's server CPU goes), the budgets, and the warnings added to its context.
 */
import type { QrMode } from '../../../src/quicklogin/quicklogin.js';
import { drift, mean, type Bracketed } from './reference.js';
import { BUDGET_SHARE, DRIFT_LIMIT, HTTP, IN_PROCESS, MODES, OTHER_CPU_LIMIT } from './settings.js';
import { formatMicros, formatRate, formatRatio, table } from '../measure/stats.js';
import type { BenchReport, BudgetCheck, Measurement } from '../measure/types.js';

/** What one run collects. */
export interface Figures {
  inProcess: Measurement[];
  http: Bracketed[];
}

/** The report's tables and budgets from a run's figures; warnings are appended to `context`. */
export function build(figures: Figures, context: string[]): Pick<BenchReport, 'sections' | 'budgets'> {
  const get = (key: string): Measurement => {
    const m = figures.inProcess.find((x) => x.key === key);
    if (!m) throw new Error(`no measurement ${key}`);
    return m;
  };
  const bracket = (key: string): Bracketed => {
    const b = figures.http.find((x) => x.http.key === key);
    if (!b) throw new Error(`no measurement ${key}`);
    return b;
  };
  const raw = get('raw.encodeQr');
  const bare = bracket('http.bare').http;
  const perOp = (m: Measurement): number => 1e6 / m.rate;
  const micros = (m: Measurement): number => m.cpuMicrosPerOp ?? perOp(m);
  const percent = (value: number | undefined): string => (value === undefined ? '' : `${value.toFixed(0)}%`);
  const other = (m: Measurement): string =>
    m.otherCpuPercent === undefined ? '' : `${m.otherCpuPercent.toFixed(0)}%${m.otherCpuPercent > OTHER_CPU_LIMIT ? ' !' : ''}`;
  const drifted = (b: Bracketed): boolean => drift(b) > DRIFT_LIMIT;

  const inProcessRows = figures.inProcess.map((m) => [
    m.label,
    formatRate(m.rate),
    `${m.unit}/s`,
    formatMicros(perOp(m)),
    formatRatio(m.rate / raw.rate),
    percent(m.cpuPercent),
    other(m),
  ]);

  const httpRows = figures.http.map((b) => {
    const m = b.http;
    return [
      m.label,
      formatRate(m.rate),
      formatRatio(m.rate / bare.rate),
      `${formatRate(b.before.rate)} / ${formatRate(b.after.rate)}${drifted(b) ? ' ~' : ''}`,
      formatRatio(m.rate / mean(b)),
      m.latencyMs ? m.latencyMs.p50.toFixed(1) : '',
      m.latencyMs ? m.latencyMs.p99.toFixed(1) : '',
      percent(m.cpuPercent),
      formatMicros(m.cpuMicrosPerOp),
      percent(m.clientCpuPercent),
      other(m),
      String(m.errors ?? 0),
    ];
  });

  // Where one request's server CPU goes: measured pieces, each as CPU µs per operation. The
  // encoding cost is the one measured next to the request, the rest comes from the in-process rows.
  const workOf: Record<QrMode, Measurement | undefined> = { text: get('render.text'), base64: get('render.base64'), image: undefined };
  const breakdownRows = MODES.map((mode) => {
    const b = bracket(`http.${mode}`);
    const domain = get(`domain.${mode}`);
    const work = workOf[mode];
    const encode = work ? (micros(b.before) + micros(b.after)) / 2 : 0;
    // Differences of separately measured figures: tiny parts can come out slightly negative.
    const render = work ? Math.max(0, micros(work) - micros(raw)) : 0;
    const store = Math.max(0, micros(domain) - (work ? micros(work) : 0));
    const total = b.http.cpuMicrosPerOp ?? Number.NaN;
    return [
      `mode=${mode}`,
      formatMicros(total),
      formatMicros(encode),
      formatMicros(render),
      formatMicros(store),
      formatMicros(total - encode - render - store),
      formatMicros(bare.cpuMicrosPerOp),
    ];
  });

  // The bare route runs in another process before tabwire's: its references and the mode's tell
  // whether the machine's speed moved in between (then the plain ratio is not to be trusted).
  const bareBracket = bracket('http.bare');
  const budgets: BudgetCheck[] = (['text', 'base64'] as const).map((mode) => {
    const b = bracket(`http.${mode}`);
    const share = b.http.rate / bare.rate;
    const budget = BUDGET_SHARE[mode];
    const needed = bare.rate * budget;
    const met = share >= budget;
    const moved = Math.abs(mean(b) - mean(bareBracket)) / Math.max(mean(b), mean(bareBracket));
    const corrected = b.http.rate / mean(b) / (bare.rate / mean(bareBracket));
    const measured = `${formatRate(b.http.rate)} req/s = ${formatRatio(share)} of the bare route's ${formatRate(bare.rate)} req/s`;
    const gap = met
      ? `needs ${formatRate(needed)}`
      : `short by ${formatRate(needed - b.http.rate)} req/s, ${((1 - b.http.rate / needed) * 100).toFixed(0)}% below the ${formatRate(needed)} needed`;
    const problems = [
      ...(drifted(b) ? [`encodeQr moved ${(drift(b) * 100).toFixed(0)}% across the run`] : []),
      ...(moved > DRIFT_LIMIT ? [`encodeQr ran ${(moved * 100).toFixed(0)}% apart around the bare route and around this mode`] : []),
      ...[bareBracket.http, b.before, b.http, b.after].filter((m) => (m.otherCpuPercent ?? 0) > OTHER_CPU_LIMIT).map((m) => `${m.label} disturbed`),
    ];
    return {
      name: `mode=${mode} issuance >= ${budget * 100}% of the bare Fastify route`,
      met,
      unreliable: problems.length > 0 ? problems.join('; ') : undefined,
      detail: `${measured}; ${gap}; each rate taken relative to encodeQr in its own server: ${formatRatio(corrected)}`,
    };
  });

  const all = [...figures.inProcess, ...figures.http.flatMap((b) => [b.before, b.http, b.after])];
  const errors = all.reduce((n, m) => n + (m.errors ?? 0), 0);
  if (errors > 0) context.push(`WARNING: ${errors} failed requests; see the errors column and notes.`);
  // On 2 cores anything else running takes CPU from the server or the generator.
  const disturbed = all.filter((m) => (m.otherCpuPercent ?? 0) > OTHER_CPU_LIMIT);
  if (disturbed.length > 0) {
    context.push(
      `WARNING: other processes used > ${OTHER_CPU_LIMIT}% of a core during ${disturbed.length} measurement(s) (marked !); rerun on a quiet machine.`,
    );
  }
  const unsteady = figures.http.filter(drifted);
  if (unsteady.length > 0) {
    context.push(
      `WARNING: the encodeQr rate moved by more than ${DRIFT_LIMIT * 100}% across ${unsteady.length} HTTP measurement(s) (marked ~): the machine's speed changed; rerun.`,
    );
  }
  const notes = all.filter((m) => m.note).map((m) => `${m.label}: ${m.note}`);

  return {
    sections: [
      {
        heading: `In-process, one thread of this process (no server running): median of ${IN_PROCESS.rounds} interleaved ${IN_PROCESS.sliceMs} ms slices`,
        lines: table(['operation', 'rate', 'unit', 'µs/op', 'vs encodeQr', 'CPU', 'other'], inProcessRows),
      },
      {
        heading: `HTTP over loopback: ${HTTP.connections} keep-alive connections, ${HTTP.warmupMs} ms warm-up + ${HTTP.durationMs} ms measured; server in a child process`,
        lines: [
          ...table(
            ['request', 'req/s', 'vs bare', 'encodeQr/s before / after', 'vs encodeQr', 'p50 ms', 'p99 ms', 'srv CPU', 'srv µs/req', 'gen CPU', 'other', 'errors'],
            httpRows,
          ),
          'vs encodeQr: req/s over the mean of the encodeQr rates measured inside the server process just before and just after.',
        ],
      },
      {
        heading: 'Where the server CPU of one request goes (µs)',
        lines: [
          ...table(['request', 'server CPU', 'encode', 'render', 'code+store', 'HTTP+Fastify+GC', '(bare req)'], breakdownRows),
          'server CPU = server process CPU / requests, every thread; encode = encodeQr in the server, around the request run;',
          'render and code+store = differences of the in-process rows; HTTP+Fastify+GC = the rest; (bare req) = the bare route.',
          'Under this load the encoder thread encodes and renders most text and base64 codes beside the event loop',
          '(docs/signing.md "Encoder thread"): their encode and render are CPU of the process, not of its event loop.',
        ],
      },
      ...(notes.length > 0 ? [{ heading: 'Notes', lines: notes }] : []),
    ],
    budgets,
  };
}
