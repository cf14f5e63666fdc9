/**
 * Settings and result shapes of the QR refresh benchmark (bench/qr-refresh.ts runs it, bench/lib/refresh/
 * rounds.ts measures, bench/lib/refresh/report.ts prints). See docs/benchmarks.md#qr-refresh.
 */
import type { MultiLoadResult } from '../load/multi-load.js';
import type { Window } from '../cluster/meter.js';

/** Waiting tabs per tabwire side; each refresh is one of them asking again, in turn (every ~0.2-0.5 s at full load). */
export const REFRESH_TABS = 2_000;
/** Closed loop: keep-alive connections, warm-up and measured window of every round. */
export const LOAD = { connections: 32, warmupMs: 2_000, durationMs: 10_000 };
/** Rounds of each kind, taken in turn (bare, embedded idle, embedded, cluster idle, cluster); the figures are medians or sums. */
export const ROUNDS = 3;
/** Before the first round: every tab's first request (the one that stores its request) and V8's warm-up, uncounted. */
export const FIRST_PASS_MS = 4_000;
/** The budgets. */
export const BUDGET = {
  /** Cluster node CPU per refresh at most this multiple of the embedded node's. */
  clusterCpuRatio: 1.2,
  /** Embedded node CPU per `text` refresh at most this multiple of a bare Fastify route's per request. */
  bareCpuRatio: 2.5,
  /**
   * Redis commands and SQL statements per refresh beyond the same window without refreshes: "0". A cost the
   * refresh path pays is at least 1 per refresh; what periodic work (heartbeats, background reconciliation of
   * rate-limit shares) adds while the load runs is a small fraction. Below this fraction it counts as 0.
   */
  perRefresh: 0.01,
};
/** Rows where other processes used more than this (% of one core) are marked and their budgets unreliable. */
export { OTHER_CPU_LIMIT } from '../common.js';

/** One measured window: a load round (`load`) or an idle one beside it (no refreshes, same length). */
export interface RefreshRound {
  side: 'bare' | 'embedded' | 'cluster';
  load?: MultiLoadResult;
  window: Window;
}
