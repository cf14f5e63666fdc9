/**
 * The tables of bench/oidc-login.ts: whole logins round by round, the two logins side by side (medians over
 * the rounds) with the OpenID Connect / QuickLogin ratio of server CPU, and each step's server CPU.
 */
import { OTHER_CPU_LIMIT } from '../common.js';
import { median, percentile, table } from '../measure/stats.js';
import type { StepRound, WholeRound } from './rounds.js';

const ms = (micros: number): string => (micros / 1000).toFixed(2);
const flag = (other: number): string => `${other.toFixed(0)}${other > OTHER_CPU_LIMIT ? ' !' : ''}`;

export const cpuPerLogin = (r: WholeRound): number => r.serverCpuMicros / r.logins;

export function wholeTable(rounds: WholeRound[]): string[] {
  return table(
    ['round', 'server CPU ms/login', 'server % core', 'wall p50 ms', 'wall p99 ms', 'logins/s', 'bench CPU ms/login', 'other %'],
    rounds.map((r, i) => [
      `${i + 1}. ${r.flow}`,
      ms(cpuPerLogin(r)),
      ((r.serverCpuMicros / (r.windowMs * 1000)) * 100).toFixed(0),
      percentile(r.wallMs, 50).toFixed(1),
      percentile(r.wallMs, 99).toFixed(1),
      ((r.logins / r.windowMs) * 1000).toFixed(1),
      ms(r.benchCpuMicros / r.logins),
      flag(r.otherPercent),
    ]),
  );
}

export interface Side {
  flow: string;
  requests: number;
  cpuMicros: number;
  wallP50: number;
}

export function side(flow: string, requests: number, rounds: WholeRound[]): Side {
  const mine = rounds.filter((r) => r.flow === flow);
  return { flow, requests, cpuMicros: median(mine.map(cpuPerLogin)), wallP50: median(mine.map((r) => percentile(r.wallMs, 50))) };
}

export function comparison(base: Side, other: Side): string[] {
  return [
    ...table(
      ['login', 'requests to the service', 'server CPU ms/login', 'wall p50 ms'],
      [base, other].map((s) => [s.flow, String(s.requests), ms(s.cpuMicros), s.wallP50.toFixed(1)]),
    ),
    '',
    `${other.flow} / ${base.flow}, server CPU per login: ${(other.cpuMicros / base.cpuMicros).toFixed(2)}x (a measured figure; there is no budget)`,
    `${other.flow} / ${base.flow}, wall time per login (p50): ${(other.wallP50 / base.wallP50).toFixed(2)}x`,
  ];
}

export function stepTable(round: StepRound, whole: number): string[] {
  const total = round.steps.reduce((n, s) => n + s.serverCpuMicros, 0);
  return [
    ...table(
      ['step', 'requests', 'SQL statements', 'server CPU µs/login', 'share', 'other %'],
      round.steps.map((s) => [s.name, String(s.requests), s.sqlPerLogin.toFixed(1), Math.round(s.serverCpuMicros).toString(), `${((s.serverCpuMicros / total) * 100).toFixed(0)}%`, flag(s.otherPercent)]),
    ),
    `SQL statements a login (event loop; transaction control left out): ${[...round.sqlByKind].sort((a, b) => b[1] - a[1]).map(([k, n]) => `${k} ${n.toFixed(1)}`).join(', ')}`,
    `sum of the steps ${ms(total)} ms/login; this step round read from /proc ${ms(round.roundCpuMicros)} ms/login; the whole logins above ${ms(whole)} ms/login`,
  ];
}
