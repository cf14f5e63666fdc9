/**
 * What the sections of the cluster benchmark's report share (report.ts, report-costs.ts): number formats,
 * a window's work beyond the idle rate, the QR rounds' summaries, and the shape of a part of the report.
 */
import { OTHER_CPU_LIMIT } from '../common.js';
import type { Window } from './meter.js';
import type { QrRound, Side } from './settings.js';
import type { BenchReport, BudgetCheck, Measurement } from '../measure/types.js';

export const fmt = (n: number): string => Math.round(n).toLocaleString('en-US');
export const ms = (v: number): string => (!Number.isFinite(v) ? '-' : v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2));
export const num = (v: number, digits = 2): string => (!Number.isFinite(v) ? '-' : v >= 100 ? fmt(v) : v.toFixed(digits));
export const pct = (v: number): string => `${v.toFixed(0)}%`;

export const nodeCpu = (side: Side, w: Window): number => side.nodeNames.reduce((s, n) => s + (w.cpuMicros.get(n) ?? 0), 0);
/** Work a window did beyond the idle tabs': node, Redis and PostgreSQL CPU minus the idle rate over the same time. */
export const beyondIdle = (side: Side, w: Window, probe: 'nodes' | 'redis' | 'postgres'): number => {
  const of = (x: Window): number => (probe === 'nodes' ? nodeCpu(side, x) : (x.cpuMicros.get(probe) ?? 0));
  return Math.max(0, of(w) - (of(side.idle) / side.idle.ms) * w.ms);
};
/** Presence refreshes: the node's periodic pipelined twHold (one per held tab). */
export const brokerRefresh = (sent: Map<string, number>): number => sent.get('twHold (pipelined)') ?? 0;

export function qrSummary(rounds: QrRound[], label: string) {
  const mine = rounds.filter((r) => r.label === label);
  const rates = mine.map((r) => r.result.rate);
  const count = mine.reduce((s, r) => s + r.result.count, 0);
  return { mine, rate: rates.reduce((s, v) => s + v, 0) / rates.length, count, other: Math.max(...mine.map((r) => r.window.otherPercent)) };
}

/** A part of the report: its sections, and the budgets and measurements it decides. */
export interface Part {
  sections: BenchReport['sections'];
  budgets?: BudgetCheck[];
  measurements?: Measurement[];
}

/** The QR rounds of each side, summarised once: sections 3, 4 and 5 read them. */
export interface QrSummaries {
  embedded: ReturnType<typeof qrSummary>;
  one: ReturnType<typeof qrSummary>;
  two: ReturnType<typeof qrSummary>;
}

export const disturbed = (w: Window): string | undefined => (w.otherPercent > OTHER_CPU_LIMIT ? `other processes used ${w.otherPercent.toFixed(0)}% of a core` : undefined);
