/**
 * How the waiting-people benchmark (bench/waiting-people.ts) shows its windows: one table row per
 * measured window, the errors of a window in words, and a window as a report measurement.
 */
import { OTHER_CPU_LIMIT, mib } from '../common.js';
import type { Measurement } from '../measure/types.js';
import type { WaitingMode, WindowResult } from './rig.js';

/** A count with thousands separators. */
export const fmt = (n: number): string => n.toLocaleString('en-US');
/** Milliseconds, one decimal below 100; `-` for NaN (nothing measured). */
export const ms = (v: number): string => (Number.isFinite(v) ? (v >= 100 ? v.toFixed(0) : v.toFixed(1)) : '-');

/** One table row for a measured window, in the columns of `header`. */
export function row(label: string, r: WindowResult, mode: WaitingMode, verdict: string): string[] {
  return [
    label,
    fmt(r.tabs),
    fmt(Math.round(r.rate)),
    ms(r.p50),
    ms(r.p99),
    ms(r.max),
    ...(mode === 'image' ? [ms(r.postP99)] : []),
    String(r.errors + r.closes),
    `${r.serverCpuPercent.toFixed(0)}%`,
    Number.isFinite(r.serverMicrosPerRefresh) ? r.serverMicrosPerRefresh.toFixed(0) : '-',
    mib(r.serverRss),
    `${ms(r.serverLoopP99Ms)}/${ms(r.serverLoopMaxMs)}`,
    ms(r.gcMaxMs),
    `${r.clientCpuPercent.toFixed(0)}%`,
    `${ms(r.clientLoopP99Ms)}/${ms(r.clientLoopMaxMs)}`,
    Number.isFinite(r.bunching) ? r.bunching.toFixed(2) : '-',
    `${r.otherPercent.toFixed(0)}%${r.otherPercent > OTHER_CPU_LIMIT ? ' !' : ''}`,
    verdict,
  ];
}

/** The table's column heads; the POST's own p99 only in image mode, where a refresh is two requests. */
export const header = (mode: WaitingMode): string[] => [
  'window',
  'tabs',
  'codes/s',
  'p50 ms',
  'p99 ms',
  'max ms',
  ...(mode === 'image' ? ['POST p99'] : []),
  'errors',
  'srv CPU',
  'srv µs/code',
  'srv RSS',
  'srv lag p99/max',
  'GC max',
  'load CPU',
  'load lag p99/max',
  'bunching',
  'other',
  'verdict',
];

/** A window's errors in words: counts by kind, WebSockets the server closed, and the first error's detail. */
export const describeErrors = (r: WindowResult): string =>
  `${Object.entries(r.errorKinds)
    .map(([k, n]) => `${n} ${k}`)
    .join(', ')}${r.closes > 0 ? `${Object.keys(r.errorKinds).length > 0 ? ', ' : ''}${r.closes} WebSockets closed by the server` : ''}${r.firstError ? `; first: ${r.firstError}` : ''}`;

/** A window as a report measurement: codes per second, the server's CPU, latency, errors. */
export const measurementOf = (key: string, label: string, r: WindowResult, note: string): Measurement => ({
  key,
  label,
  rate: r.rate,
  unit: 'code',
  count: r.refreshes,
  windowMs: r.windowMs,
  cpuPercent: r.serverCpuPercent,
  cpuMicrosPerOp: r.serverMicrosPerRefresh,
  clientCpuPercent: r.clientCpuPercent,
  otherCpuPercent: r.otherPercent,
  latencyMs: { p50: r.p50, p99: r.p99, max: r.max },
  errors: r.errors + r.closes,
  note,
});
