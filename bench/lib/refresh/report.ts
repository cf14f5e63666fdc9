/**
 * The report of the QR refresh benchmark (bench/qr-refresh.ts): every window in a table, what Redis and
 * PostgreSQL ran per refresh beyond the idle window beside it, and the budgets.
 */
import { cpus, loadavg } from 'node:os';
import { machineLine, revision, versionOf } from '../common.js';
import type { Window } from '../cluster/meter.js';
import { shortSql } from '../cluster/meter.js';
import { sumOf } from '../measure/counter-maps.js';
import { median, table } from '../measure/stats.js';
import type { BenchReport, BudgetCheck, Measurement } from '../measure/types.js';
import { BUDGET, FIRST_PASS_MS, LOAD, OTHER_CPU_LIMIT, REFRESH_TABS, ROUNDS, type RefreshRound } from './settings.js';

interface Figures {
  rounds: RefreshRound[];
  /** One idle window per round of embedded and cluster, taken just before that round's load. */
  idle: RefreshRound[];
  idleBefore: number;
}

const num = (v: number, digits = 1): string => (Number.isFinite(v) ? v.toFixed(digits) : '-');
const fmt = (v: number): string => Math.round(v).toLocaleString('en-US');
const cpuOf = (w: Window, name = 'server'): number => w.cpuMicros.get(name) ?? 0;

/** `counts` of the load window minus the idle window's, scaled to the load window's length; per key, never below 0. */
function beyondIdle(load: Map<string, number>, idle: Map<string, number>, scale: number): Map<string, number> {
  const out = new Map<string, number>();
  for (const [k, v] of load) {
    const extra = v - (idle.get(k) ?? 0) * scale;
    if (extra > 0.5) out.set(k, extra);
  }
  return out;
}

const addInto = (into: Map<string, number>, from: Map<string, number>): void => {
  for (const [k, v] of from) into.set(k, (into.get(k) ?? 0) + v);
};

/** Per side: each load round with the idle window beside it (bare: none, its idle cost is nil). */
function pairs(f: Figures, side: RefreshRound['side']): { load: RefreshRound; idle: RefreshRound | undefined }[] {
  const loads = f.rounds.filter((r) => r.side === side);
  const idles = f.idle.filter((r) => r.side === side);
  return loads.map((load, i) => ({ load, idle: idles[i] }));
}

/** Server CPU µs per refresh: all of the window's, and beyond the idle window's rate. */
function cpuPerRefresh(p: { load: RefreshRound; idle: RefreshRound | undefined }, name = 'server'): { total: number; beyond: number } {
  const count = p.load.load!.count;
  const total = cpuOf(p.load.window, name);
  const idleRate = p.idle ? cpuOf(p.idle.window, name) / p.idle.window.ms : 0;
  return { total: total / count, beyond: (total - idleRate * p.load.window.ms) / count };
}

export function build(f: Figures): Pick<BenchReport, 'context' | 'sections' | 'measurements' | 'budgets'> {
  const bare = pairs(f, 'bare');
  const embedded = pairs(f, 'embedded');
  const cluster = pairs(f, 'cluster');
  const disturbed = (ws: RefreshRound[]): string | undefined => {
    const bad = ws.filter((r) => r.window.otherPercent > OTHER_CPU_LIMIT);
    return bad.length > 0 ? `other processes used > ${OTHER_CPU_LIMIT}% of a core in ${bad.length} of its ${ws.length} windows (up to ${Math.max(...bad.map((r) => r.window.otherPercent)).toFixed(0)}%)` : undefined;
  };
  const allOf = (ps: { load: RefreshRound; idle: RefreshRound | undefined }[]): RefreshRound[] => ps.flatMap((p) => (p.idle ? [p.idle, p.load] : [p.load]));

  const rows = [...bare, ...embedded, ...cluster].flatMap((p) => {
    const lines: string[][] = [];
    const row = (r: RefreshRound, per: string, perBeyond: string): string[] => [
      r.side,
      r.load ? 'refreshes' : 'idle',
      r.load ? fmt(r.load.rate) : '',
      r.load ? num(r.load.p50, 2) : '',
      r.load ? num(r.load.p99, 2) : '',
      `${num((cpuOf(r.window) / (r.window.ms * 1000)) * 100, 0)}%`,
      per,
      perBeyond,
      r.window.redis ? fmt(sumOf(r.window.redis.calls)) : '',
      r.window.pg ? fmt(sumOf(r.window.pg.calls)) : '',
      `${num(r.window.otherPercent, 0)}%${r.window.otherPercent > OTHER_CPU_LIMIT ? ' !' : ''}`,
    ];
    if (p.idle) lines.push(row(p.idle, '', ''));
    const c = cpuPerRefresh(p);
    lines.push(row(p.load, num(c.total), p.idle ? num(c.beyond) : ''));
    return lines;
  });

  // What Redis and PostgreSQL ran per refresh beyond the same time without refreshes.
  const redisExtra = new Map<string, number>();
  const sqlExtra = new Map<string, number>();
  const redisIdle = new Map<string, number>();
  const sqlIdle = new Map<string, number>();
  let refreshes = 0;
  let idleMs = 0;
  let walBytes = 0;
  let writeXacts = 0;
  for (const p of cluster) {
    const w = p.load.window;
    const i = p.idle!.window;
    const scale = w.ms / i.ms;
    refreshes += p.load.load!.count;
    idleMs += i.ms;
    addInto(redisExtra, beyondIdle(w.redis?.calls ?? new Map(), i.redis?.calls ?? new Map(), scale));
    addInto(sqlExtra, beyondIdle(w.pg?.calls ?? new Map(), i.pg?.calls ?? new Map(), scale));
    addInto(redisIdle, i.redis?.calls ?? new Map());
    addInto(sqlIdle, i.pg?.calls ?? new Map());
    walBytes += Math.max(0, (w.pg?.walBytes ?? 0) - (i.pg?.walBytes ?? 0) * scale);
    writeXacts += Math.max(0, (w.pg?.writeXacts ?? 0) - (i.pg?.writeXacts ?? 0) * scale);
  }
  const redisPer = sumOf(redisExtra) / refreshes;
  const sqlPer = sumOf(sqlExtra) / refreshes;
  const perSecond = (m: Map<string, number>): string =>
    [...m].sort((x, y) => y[1] - x[1]).map(([k, v]) => `${k} ${num((v * 1000) / idleMs, 2)}`).join(', ') || 'none';
  const perRefresh = (m: Map<string, number>, short = (k: string) => k): string =>
    [...m].sort((x, y) => y[1] - x[1]).map(([k, v]) => `${short(k)} ${num(v / refreshes, 3)}`).join(', ') || 'none';
  const sqlByShort = (m: Map<string, number>): Map<string, number> => {
    const out = new Map<string, number>();
    for (const [k, v] of m) out.set(shortSql(k), (out.get(shortSql(k)) ?? 0) + v);
    return out;
  };

  const bareCpu = median(bare.map((p) => cpuPerRefresh(p).total));
  const embeddedCpu = median(embedded.map((p) => cpuPerRefresh(p).total));
  const embeddedBeyond = median(embedded.map((p) => cpuPerRefresh(p).beyond));
  const clusterBeyond = median(cluster.map((p) => cpuPerRefresh(p).beyond));
  const clusterTotal = median(cluster.map((p) => cpuPerRefresh(p).total));
  const clusterUnreliable = disturbed([...allOf(cluster)]);
  const budgets: BudgetCheck[] = [
    {
      name: `cluster, a refresh answered by the node holding the tab: Redis commands per refresh beyond the same window without refreshes = 0 (INFO commandstats, scripts' commands included; < ${BUDGET.perRefresh} counts as 0)`,
      met: redisPer < BUDGET.perRefresh,
      unreliable: clusterUnreliable,
      detail: `${num(redisPer, 3)} per refresh over ${fmt(refreshes)} refreshes (${perRefresh(redisExtra)}); without refreshes, per second: ${perSecond(redisIdle)}`,
    },
    {
      name: `cluster, the same refreshes: SQL statements per refresh beyond the same window without refreshes = 0 (pg_stat_statements, BEGIN/COMMIT included; < ${BUDGET.perRefresh} counts as 0)`,
      met: sqlPer < BUDGET.perRefresh,
      unreliable: clusterUnreliable,
      detail: `${num(sqlPer, 3)} per refresh (${perRefresh(sqlByShort(sqlExtra))}; ${num(writeXacts / refreshes, 3)} write transactions, ${num(walBytes / refreshes, 0)} WAL bytes per refresh); without refreshes, per second: ${perSecond(sqlByShort(sqlIdle))}`,
    },
    {
      name: `cluster node CPU per refresh <= ${BUDGET.clusterCpuRatio}x the embedded node's (all threads, beyond each one's idle window, medians of ${ROUNDS} rounds)`,
      met: clusterBeyond <= BUDGET.clusterCpuRatio * embeddedBeyond,
      unreliable: disturbed([...allOf(cluster), ...allOf(embedded)]),
      detail: `cluster node A ${num(clusterBeyond)} µs vs embedded ${num(embeddedBeyond)} µs = ${num(clusterBeyond / embeddedBeyond, 2)}x (all of the window's CPU: ${num(clusterTotal)} vs ${num(embeddedCpu)} µs)`,
    },
    {
      name: `embedded node CPU per text refresh, all threads, <= ${BUDGET.bareCpuRatio}x a bare Fastify JSON route's CPU per request (same load generator and request bytes, medians of ${ROUNDS} rounds)`,
      met: embeddedCpu <= BUDGET.bareCpuRatio * bareCpu,
      unreliable: disturbed([...allOf(embedded), ...allOf(bare)]),
      detail: `${num(embeddedCpu)} µs vs ${num(bareCpu)} µs = ${num(embeddedCpu / bareCpu, 2)}x (rates: embedded ${fmt(median(embedded.map((p) => p.load.load!.rate)))} req/s, bare ${fmt(median(bare.map((p) => p.load.load!.rate)))} req/s)`,
    },
  ];

  const measurement = (side: RefreshRound['side'], ps: typeof bare, micros: number): Measurement => ({
    key: `qrRefresh.${side}`,
    label: `${side}: POST ${side === 'bare' ? '/bare' : '/QuickLogin'} refresh`,
    rate: median(ps.map((p) => p.load.load!.rate)),
    unit: 'req',
    count: ps.reduce((n, p) => n + p.load.load!.count, 0),
    windowMs: ps.reduce((n, p) => n + p.load.window.ms, 0),
    cpuMicrosPerOp: micros,
    otherCpuPercent: Math.max(...ps.map((p) => p.load.window.otherPercent)),
  });
  const cpu = cpus();
  return {
    context: [
      machineLine(),
      `tabwire: ${revision()}; libraries: fastify ${versionOf('fastify')}, ioredis ${versionOf('ioredis')}, pg ${versionOf('pg')}`,
      `servers: bench/servers/bare.ts (Fastify, one JSON route); bench/servers/channel-tabwire.ts (buildApp, log silent, the service's Node.js flags) as the embedded node (SQLite, memory broker) and as cluster nodes A and B (private PostgreSQL 15 and Redis on loopback); ${cpu.length} cores shared by all`,
      `refresh: each of ${fmt(REFRESH_TABS)} registered tabs per tabwire side (node A's for the cluster; B holds none) asks again, in turn, with its cookie: POST /QuickLogin {serviceId:'', tab, mode:'text', purpose}; the bare route gets the same bytes on POST /bare; every tab asked through ${FIRST_PASS_MS / 1000} s before the first round (its request stored, uncounted)`,
      `load: closed loop, ${LOAD.connections} keep-alive connections, ${LOAD.warmupMs / 1000} s warm-up + ${LOAD.durationMs / 1000} s measured; ${ROUNDS} rounds, in turn: bare, embedded idle, embedded, cluster idle, cluster; an idle window: the same tabs connected, no refreshes, as long as a load window`,
      `idle check before the run: other processes used ${num(f.idleBefore, 0)}% of a core; load average at the end ${loadavg().map((v) => v.toFixed(1)).join(' ')}`,
    ],
    sections: [
      {
        heading: 'Windows (server: the bare server, the embedded node, or cluster node A; CPU from /proc, every thread)',
        lines: [
          ...table(['side', 'window', 'req/s', 'p50 ms', 'p99 ms', 'server CPU', 'µs/refresh', 'beyond idle', 'Redis cmds', 'SQL stmts', 'other'], rows),
          'Redis cmds: INFO commandstats (commands run inside scripts included; the benchmark\'s own INFO left out); SQL stmts: pg_stat_statements calls (the benchmark\'s own reads left out).',
        ],
      },
      {
        heading: 'Cluster: Redis and PostgreSQL per refresh beyond the idle window beside it (scaled to the same length)',
        lines: [
          `Redis, per refresh: ${perRefresh(redisExtra)}`,
          `Redis, without refreshes (heartbeats, background work), per second: ${perSecond(redisIdle)}`,
          `PostgreSQL, per refresh: ${perRefresh(sqlByShort(sqlExtra))}`,
          `PostgreSQL, without refreshes, per second: ${perSecond(sqlByShort(sqlIdle))}`,
        ],
      },
    ],
    measurements: [measurement('bare', bare, bareCpu), measurement('embedded', embedded, embeddedCpu), measurement('cluster', cluster, clusterBeyond)],
    budgets,
  };
}
