/**
 * What a waiting-people load process measures in a window (`window-start` .. `window-read`): refresh
 * latency, errors, when refreshes start, pages coming and going, and its own event-loop delay.
 */
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { LatencyHistogram, type HistogramData } from '../../lib/measure/latency-histogram.js';
import { state } from './state.js';

/** What `window-read` answers. */
export interface WindowReading {
  /** Whole refresh: POST (and the PNG in image mode), from the timer to the last byte. */
  total: HistogramData;
  /** The POST alone (image mode; empty in text mode). */
  post: HistogramData;
  /** Refreshes completed without error in the window. */
  ok: number;
  errors: number;
  errorKinds: Record<string, number>;
  firstError: string | undefined;
  /** HTTP requests answered in the window (2 per refresh in image mode). */
  httpAnswers: number;
  /** Refreshes still waiting for an answer now, and the age of the oldest (ms). */
  outstanding: number;
  oldestOutstandingMs: number;
  /** Sockets the server closed since the tabs were opened (cumulative). */
  unexpectedCloses: number;
  /** This process's event-loop delay in the window (ms): a busy generator shows here. */
  loopP99Ms: number;
  loopMaxMs: number;
  /** Longest queue of requests waiting for a pool connection in the window. */
  maxQueue: number;
  tabs: number;
  windowMs: number;
  /** Refreshes started per `arrivalBinMs` of the window, from its start (see `arrivalBunching` in bench/lib/waiting/window.ts). */
  arrivals: number[];
  arrivalBinMs: number;
  /** With churn: pages that left, and new pages that took their place, in the window. */
  left: number;
  arrived: number;
  /** With churn: a new page's WebSocket handshake + Register until CheckServerInstance (ms). */
  register: HistogramData;
}

/** Width of the bins `arrivals` counts refreshes in. */
const ARRIVAL_BIN_MS = 20;

// Per window.
const total = new LatencyHistogram();
const post = new LatencyHistogram();
let ok = 0;
let errors = 0;
let errorKinds: Record<string, number> = {};
let firstError: string | undefined;
let windowStart = performance.now();
/** Refreshes started per ARRIVAL_BIN_MS since windowStart; bounded to a window of 10 minutes. */
let arrivals: number[] = [];
const MAX_ARRIVAL_BINS = 600_000 / ARRIVAL_BIN_MS;
// Churn (see churn.ts): pages that left and new ones that arrived.
let left = 0;
let arrived = 0;
const register = new LatencyHistogram();
// Sampled every 1 ms; a sample is the time between two timer runs, so 1 ms is "no delay".
const loop = monitorEventLoopDelay({ resolution: 1 });
loop.enable();

/** Counts an error by kind; the window's first is kept with its detail. */
export function noteError(kind: string, detail: string): void {
  errors++;
  errorKinds[kind] = (errorKinds[kind] ?? 0) + 1;
  firstError ??= `${kind}: ${detail}`;
}

/** A refresh starts at `since` (performance.now()): counted in its bin of `arrivals`. */
export function recordStart(since: number): void {
  const bin = Math.floor((since - windowStart) / ARRIVAL_BIN_MS);
  if (bin < MAX_ARRIVAL_BINS) arrivals[bin] = (arrivals[bin] ?? 0) + 1;
}

/** A refresh completed without error, after `ms` from its timer to the last byte. */
export function recordRefresh(ms: number): void {
  ok++;
  total.record(ms);
}

/** Image mode: the POST of a refresh was answered after `ms`. */
export function recordPost(ms: number): void {
  post.record(ms);
}

/** With churn: a page left. */
export function recordLeft(): void {
  left++;
}

/** With churn: a new page took a slot, `registerMs` after its handshake started. */
export function recordArrived(registerMs: number): void {
  register.record(registerMs);
  arrived++;
}

/** `window-start`: every count and histogram (the pool's too) starts from 0. */
export function startWindow(): void {
  total.reset();
  post.reset();
  ok = 0;
  errors = 0;
  errorKinds = {};
  firstError = undefined;
  state.pool?.resetCounts();
  loop.reset();
  windowStart = performance.now();
  arrivals = [];
  left = 0;
  arrived = 0;
  register.reset();
}

/** `window-read`: what happened since `startWindow`, and the refreshes in flight now. */
export function readWindow(): WindowReading {
  const now = performance.now();
  let outstanding = 0;
  let oldest = 0;
  for (const tab of state.tabs) {
    if (tab.since === 0) continue;
    outstanding++;
    oldest = Math.max(oldest, now - tab.since);
  }
  return {
    total: total.data(),
    post: post.data(),
    ok,
    errors,
    errorKinds,
    firstError,
    httpAnswers: state.pool?.answers ?? 0,
    outstanding,
    oldestOutstandingMs: oldest,
    unexpectedCloses: state.unexpectedCloses,
    loopP99Ms: loop.percentile(99) / 1e6,
    loopMaxMs: loop.max / 1e6,
    maxQueue: state.pool?.maxQueue ?? 0,
    // Holes (bins without a refresh) count as 0.
    arrivals: Array.from(arrivals, (n) => n ?? 0),
    arrivalBinMs: ARRIVAL_BIN_MS,
    left,
    arrived,
    register: register.data(),
    tabs: state.tabs.filter((t) => t.running).length,
    windowMs: now - windowStart,
  };
}
