/**
 * With the streams on a Redis Cluster (`BENCH_REDIS_CLUSTER`), how the cluster side's Redis load spreads over
 * the one Redis of `redisUrl` and each shard (report.ts section 4): each one's share of all the Redis CPU and
 * the commands it executed, per Register and per login, beside the idle window's.
 */
import { table } from '../measure/stats.js';
import type { RedisPart } from '../processes/redis-cluster.js';
import type { Window } from './meter.js';
import type { Side } from './settings.js';

const num = (v: number, digits = 1): string => (!Number.isFinite(v) ? '-' : v >= 100 ? Math.round(v).toLocaleString('en-US') : v.toFixed(digits));
const share = (part: number, all: number): string => (all > 0 ? `${((part / all) * 100).toFixed(0)}%` : '-');

/** Lines for section 4; none when the windows hold a single Redis's readings. */
export function redisSpreadLines(c: Side): string[] {
  const idle = c.idle.redis?.parts;
  const reg = c.open.window.redis?.parts;
  const login = c.login.window.redis?.parts;
  if (!idle || !reg || !login || idle.length < 2) return [];
  const cpuOf = (parts: RedisPart[]): number => parts.reduce((s, p) => s + p.cpuMicros, 0);
  const callsOf = (parts: RedisPart[]): number => parts.reduce((s, p) => s + p.calls, 0);
  /** A part's CPU in the window minus its idle rate over the same time, per operation. */
  const beyondIdle = (w: Window, p: RedisPart, i: number, per: number): number => Math.max(0, p.cpuMicros - (idle[i]!.cpuMicros / c.idle.ms) * w.ms) / per;
  const regUs = reg.map((r, i) => beyondIdle(c.open.window, r, i, c.open.tabs));
  const loginUs = login.map((l, i) => beyondIdle(c.login.window, l, i, c.login.logins));
  const idleS = c.idle.ms / 1000;
  const rows = idle.map((p, i) => [
    p.name,
    share(p.cpuMicros, cpuOf(idle)),
    num(p.calls / idleS, 0),
    share(reg[i]!.cpuMicros, cpuOf(reg)),
    num(regUs[i]!),
    num(reg[i]!.calls / c.open.tabs, 2),
    share(login[i]!.cpuMicros, cpuOf(login)),
    num(loginUs[i]!),
    num(login[i]!.calls / c.login.logins, 2),
  ]);
  const total = (xs: number[]): number => xs.reduce((s, v) => s + v, 0);
  rows.push(['all Redis', '100%', num(callsOf(idle) / idleS, 0), '100%', num(total(regUs)), num(callsOf(reg) / c.open.tabs, 2), '100%', num(total(loginUs)), num(callsOf(login) / c.login.logins, 2)]);
  return [
    `Redis load spread over the one Redis (redisUrl) and the ${idle.length - 1} primaries of the streams' Redis Cluster (redisClusterUrls):`,
    ...table(
      ['Redis process', 'idle: CPU share', 'idle cmds/s', 'Register: CPU share', 'µs/Register', 'cmds/Register', 'login: CPU share', 'µs/login', 'cmds/login'],
      rows,
    ),
    'CPU share: of all the Redis processes\' CPU in the window (/proc); µs: the process\'s CPU in the window minus its idle rate, per operation; cmds: commands it executed (INFO commandstats, scripts\' inner commands and the cluster clients\' CLUSTER commands included, presence refreshes in the window included).',
  ];
}
