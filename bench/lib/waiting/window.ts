/**
 * A measured window of the waiting-people rig (bench/lib/waiting/rig.ts): the load processes'
 * readings merged into one result, with the CPU each process used, and the rule a window holds by.
 */
import { summarise } from '../measure/latency-histogram.js';
import type { WindowReading } from '../../servers/waiting/readings.js';

/** A refresh unanswered this long counts as an error (the page would show a stale code for good). */
const STUCK_MS = 10_000;

/** One measured window. Latencies in ms, CPU in % of one core. */
export interface WindowResult {
  tabs: number;
  windowMs: number;
  /** Refreshes answered without error in the window, and their rate per second. */
  refreshes: number;
  rate: number;
  p50: number;
  p99: number;
  max: number;
  /** The POST alone (image mode; NaN in text mode). */
  postP50: number;
  postP99: number;
  httpAnswers: number;
  errors: number;
  errorKinds: Record<string, number>;
  firstError: string | undefined;
  /** Refreshes unanswered for more than STUCK_MS at the window's end (counted in errors too). */
  stuck: number;
  /** WebSockets the server closed during the window. */
  closes: number;
  serverCpuPercent: number;
  /** Server CPU per answered refresh (µs): the whole cost of one waiting person's new code, pings included. */
  serverMicrosPerRefresh: number;
  clientCpuPercent: number;
  otherPercent: number;
  serverRss: number;
  clientLoopP99Ms: number;
  /** The longest event-loop delay of a load process in the window (ms): a pause there delays the answers it reads. */
  clientLoopMaxMs: number;
  maxQueue: number;
  /** How unevenly refreshes fall within the refresh period (`arrivalBunching`: 0 = evenly). */
  bunching: number;
  /** The server's event-loop delay over the window (ms, 1 ms sampling included) and its GC pauses. */
  serverLoopP99Ms: number;
  serverLoopMaxMs: number;
  gcCount: number;
  gcTotalMs: number;
  gcMaxMs: number;
  /** With churn (`WaitingRig.churn`): pages that left and new ones that took their place, per second. */
  leftPerSecond: number;
  arrivedPerSecond: number;
  /** With churn: a new page's WebSocket handshake and Register, p99 (ms; NaN without churn). */
  registerP99: number;
}

/** The server's event-loop and GC figures since the last look (bench route of waiting-tabwire.ts). */
export interface LoopReading {
  p99Ms: number;
  maxMs: number;
  gc: { count: number; totalMs: number; maxMs: number };
}

/** What the rig saw of one window besides the load processes' readings. */
export interface WindowFigures {
  tabs: number;
  windowMs: number;
  periodMs: number;
  loop: LoopReading;
  /** CPU (µs) the server and the load processes used in the window. */
  serverMicros: number;
  loadMicros: number;
  otherPercent: number;
  serverRss: number;
  /** WebSockets the server closed during the window. */
  closes: number;
}

/**
 * How unevenly refreshes fall within the refresh period: the window's arrivals (all load processes,
 * counted per `binMs`) folded onto one period, and the coefficient of variation of that profile
 * (0 = evenly spread; sampling noise alone gives ~0.03 at 12,000 tabs over 20 s). A page asks again a
 * fixed time after its answer, so the refreshes a slow moment of the server held back are answered
 * together and come back together one period later, and keep doing so: each stall adds to the bunches,
 * and a bunch arrives faster than the server answers. Only whole periods are folded.
 */
export function arrivalBunching(perProcess: readonly number[][], binMs: number, periodMs: number): number {
  const binsPerPeriod = Math.round(periodMs / binMs);
  const length = Math.max(0, ...perProcess.map((a) => a.length));
  // The last bin of the window is partial, and so is a trailing part of a period.
  const whole = Math.floor(Math.max(0, length - 1) / binsPerPeriod) * binsPerPeriod;
  if (whole === 0) return Number.NaN;
  const folded = new Array<number>(binsPerPeriod).fill(0);
  for (const a of perProcess) for (let i = 0; i < Math.min(whole, a.length); i++) folded[i % binsPerPeriod]! += a[i]!;
  const mean = folded.reduce((s, n) => s + n, 0) / binsPerPeriod;
  if (mean === 0) return Number.NaN;
  const variance = folded.reduce((s, n) => s + (n - mean) ** 2, 0) / binsPerPeriod;
  return Math.sqrt(variance) / mean;
}

/** A window's result holds when p99 is within the bound and nothing failed. */
export const holds = (r: WindowResult, p99LimitMs: number): boolean => r.p99 <= p99LimitMs && r.errors === 0 && r.closes === 0 && r.refreshes > 0;

/** Merges the load processes' readings of one window with what the rig saw of it. */
export function windowResult(readings: readonly WindowReading[], f: WindowFigures): WindowResult {
  const { windowMs, loop } = f;
  const totals = summarise(readings.map((r) => r.total), [50, 99]);
  const posts = summarise(readings.map((r) => r.post), [50, 99]);
  const registers = summarise(readings.map((r) => r.register), [99]);
  const refreshes = readings.reduce((s, r) => s + r.ok, 0);
  const stuck = readings.reduce((s, r) => s + (r.oldestOutstandingMs > STUCK_MS ? r.outstanding : 0), 0);
  const errorKinds: Record<string, number> = {};
  for (const r of readings) for (const [k, n] of Object.entries(r.errorKinds)) errorKinds[k] = (errorKinds[k] ?? 0) + n;
  if (stuck > 0) errorKinds[`unanswered > ${STUCK_MS / 1000} s`] = stuck;
  return {
    tabs: f.tabs,
    windowMs,
    refreshes,
    rate: (refreshes * 1000) / windowMs,
    p50: totals.values[0]!,
    p99: totals.values[1]!,
    max: totals.max,
    postP50: posts.values[0]!,
    postP99: posts.values[1]!,
    httpAnswers: readings.reduce((s, r) => s + r.httpAnswers, 0),
    errors: readings.reduce((s, r) => s + r.errors, 0) + stuck,
    errorKinds,
    firstError: readings.find((r) => r.firstError !== undefined)?.firstError,
    stuck,
    closes: f.closes,
    serverCpuPercent: (f.serverMicros / (windowMs * 1000)) * 100,
    serverMicrosPerRefresh: refreshes > 0 ? f.serverMicros / refreshes : Number.NaN,
    clientCpuPercent: (f.loadMicros / (windowMs * 1000)) * 100,
    otherPercent: f.otherPercent,
    serverRss: f.serverRss,
    clientLoopP99Ms: Math.max(...readings.map((r) => r.loopP99Ms)),
    clientLoopMaxMs: Math.max(...readings.map((r) => r.loopMaxMs)),
    maxQueue: Math.max(...readings.map((r) => r.maxQueue)),
    bunching: arrivalBunching(
      readings.map((r) => r.arrivals),
      readings[0]?.arrivalBinMs ?? 1,
      f.periodMs,
    ),
    serverLoopP99Ms: loop.p99Ms,
    serverLoopMaxMs: loop.maxMs,
    gcCount: loop.gc.count,
    gcTotalMs: loop.gc.totalMs,
    gcMaxMs: loop.gc.maxMs,
    leftPerSecond: (readings.reduce((s, r) => s + r.left, 0) * 1000) / windowMs,
    arrivedPerSecond: (readings.reduce((s, r) => s + r.arrived, 0) * 1000) / windowMs,
    registerP99: registers.values[0]!,
  };
}
