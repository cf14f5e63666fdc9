/**
 * Settings and result shapes of the cluster benchmark (bench/cluster.ts runs it, bench/lib/cluster/report.ts
 * prints it). See docs/benchmarks.md#cluster.
 */
import type { MultiLoadResult } from '../load/multi-load.js';
import type { Window } from './meter.js';
import type { RoutingRun } from './routing.js';

/** Tabs each node holds: ~20,000 open files per process here, minus sockets to the store, Redis, the load. */
export const TABS = Number(process.env.BENCH_CLUSTER_TABS ?? 19_000);
export const FD_MARGIN = 200;
export const OPEN_CONCURRENCY = 100;
/** Tabs opened and closed before the 0-tab memory reading (first-use growth off the books). */
export const WARMUP_TABS = 200;
/** The event script pings every 10 s. */
export const PING_MS = 10_000;
/** Idle window: a multiple of the presence refresh period (10 s), so it holds a whole number of refreshes. */
export const IDLE_MS = 20_000;
/** deliver-latency's shape: events to random tabs of the first 10,000, 500 a second. */
export const TARGETS = Math.min(10_000, TABS);
export const EVENTS = 2_000;
export const PER_SECOND = 500;
export const WARMUP_EVENTS = 500;
/** Logins (GET the signUrl, signed POST) a second, started on a fixed schedule; each on its own tab. */
export const LOGIN_RATE = 100;
export const LOGINS = Math.min(2_000, TABS - 200);
export const LOGIN_WARMUP = 200;
/** QR issuance: closed loop, 32 keep-alive connections in all, 10 s windows (one presence refresh per node each). */
export const QR = { connections: 32, warmupMs: 2_000, durationMs: 10_000, rounds: 3 };
/** Tabs per node whose cookies the QR load cycles through, in turn. */
export const QR_TABS = Math.min(2_000, TABS);
/**
 * The QR limits of the benchmark's nodes. The load comes from one address, and its sessions ask far more
 * often than a page does: a node answers ~20,000 requests a second, so each of 2,000 sessions asks ~10 times
 * a second against a page's one per 2 s (the default per-session limit, 300 a minute, would refuse most).
 * The limiter has tests of its own; this phase measures issuance.
 */
export const QR_LIMITS = { qrRequestsPerAddressPerMinute: 10_000_000, qrRequestsPerSessionPerMinute: 1_000_000 };
/** Beyond the tabs the logins use. */
export const QR_FROM = Math.min(LOGIN_WARMUP + LOGINS, TABS - QR_TABS);
/** The budget: cluster p99 at most this multiple of the single node's, same run. */
export const BUDGET_RATIO = 2;
/** Re-runs of a latency window allowed when other processes disturbed it (shared by the run). */
export const MAX_RETRIES = 2;
/** The binding refresh runs every max(10 s, tabBindingRetentionSeconds / 4): 150 s with the default 600 s. */
export const BINDING_REFRESH_S = 150;
/**
 * The nodes run with the longest binding retention (refresh every 6 h), so the refresh never lands in a
 * measured window at random; it is run once on its own instead (POST /__bench/binding-refresh) and its
 * cost reported per BINDING_REFRESH_S, the default interval.
 */
export const NO_PERIODIC_BINDING_REFRESH = { tabBindingRetentionSeconds: 86_400 };
/** The presence refresh: every third of the 30 s presence TTL (src/wiring/shared.ts). */
export const PRESENCE_REFRESH_S = 10;
export const PURPOSE = 'Log in to the tabwire demo';

export interface LatencySummary {
  count: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  negative: number;
}

/** A node's event loop over a run: delay p99 and max (ms, 1 ms sampling) and its longest GC pause. */
export interface LoopReading {
  node: string;
  p99Ms: number;
  maxMs: number;
  gcCount: number;
  gcMaxMs: number;
}

export interface DeliverRun {
  loops: LoopReading[];
  latency: LatencySummary;
  sent: number;
  window: Window;
  attempts: number;
  /** Cluster: the presence refreshes (hub.refresh) that ran on any node during the run, and the events sent meanwhile apart. */
  refresh?: { runs: number; ms: number[]; during: LatencySummary; outside: LatencySummary };
}

export interface LoginRun {
  loops: LoopReading[];
  latency: LatencySummary;
  answer: { p50: number; p99: number };
  logins: number;
  errors: number;
  firstError?: string;
  missing: number;
  issued: { count: number; window: Window };
  window: Window;
}

export interface QrRound {
  label: string;
  result: MultiLoadResult;
  window: Window;
}

export interface Side {
  name: string;
  /** Per node: tabs, RSS at 0 and at the tabs, settled. */
  memory: { node: string; tabs: number; rss0: number; rss: number; heap0: number; heap: number }[];
  open: { tabs: number; ms: number; window: Window };
  idle: Window;
  /** Redis PING round trips from the benchmark process every few ms through the idle window (cluster). */
  redisPing?: { count: number; p50: number; p99: number; max: number };
  /** Durations (ms) of the nodes' presence refreshes over the run (cluster). */
  refreshMs?: number[];
  idleTabs: number;
  bindingRefresh?: { ms: number; tabs: number; window: Window };
  deliver: DeliverRun;
  deliverLocal?: DeliverRun;
  login: LoginRun;
  /** Cluster: the logins again with the tabs per node cut to `tabsPerNode` (the embedded node's tabs in all). */
  sameLoad?: { tabsPerNode: number; login: LoginRun };
  /** Cluster: what each node was sent while every event was for a tab on node A (bench/lib/cluster/routing.ts). */
  routing?: RoutingRun;
  qr: QrRound[];
  closedByServer: number;
  nodeNames: string[];
}

