/**
 * The latency of `BenchLatency` events at a load child that holds tabs (bench/servers/channel-ws-clients.ts,
 * bench/servers/cluster-clients.ts), and the IPC commands that read it. An event's data.t is the sender's
 * CLOCK_MONOTONIC time in ns (process.hrtime.bigint(): one clock for every process on the machine), set
 * against the arrival time the child read before parsing the frame.
 */
import { percentile } from '../lib/measure/stats.js';

/** The samples since the last `reset`, in ms. */
export class EventLatencies {
  private ms: number[] = [];
  /** The send time (CLOCK_MONOTONIC ns, as text) of each sample; only kept when asked for. */
  private sentAt: string[] = [];
  /** Samples below 0: received before they were sent, which says the times are not from one clock. */
  private negative = 0;

  /** `keepSendTimes`: keep each sample's send time too, for `samples`. */
  constructor(private readonly keepSendTimes = false) {}

  /** An event sent at `t` (ns, as text) arrived at `at` (ns). */
  record(t: string, at: bigint): void {
    const ms = Number(at - BigInt(t)) / 1e6;
    if (ms < 0) this.negative++;
    this.ms.push(ms);
    if (this.keepSendTimes) this.sentAt.push(t);
  }

  reset(): void {
    this.ms = [];
    this.sentAt = [];
    this.negative = 0;
  }

  get count(): number {
    return this.ms.length;
  }

  /** Percentiles, mean (NaN without samples) and the count of negative samples. */
  summary() {
    const values = this.ms;
    const sum = values.reduce((s, v) => s + v, 0);
    return {
      count: values.length,
      p50: percentile(values, 50),
      p90: percentile(values, 90),
      p99: percentile(values, 99),
      max: percentile(values, 100),
      mean: values.length > 0 ? sum / values.length : Number.NaN,
      negative: this.negative,
    };
  }

  /** [send time (ns, as text), ms] per sample; empty unless send times are kept. */
  samples(): (readonly [string, number])[] {
    return this.sentAt.map((t, k) => [t, this.ms[k]!] as const);
  }
}

/** The commands `latency-reset`, `latency-count` and `latency-result`, for serveWorker. */
export function latencyCommands(latencies: EventLatencies) {
  return {
    'latency-reset'() {
      latencies.reset();
      return true;
    },
    'latency-count'() {
      return latencies.count;
    },
    'latency-result'() {
      return latencies.summary();
    },
  };
}
