/** One figure a benchmark measured. */
export interface Measurement {
  /** Stable key other rows refer to in ratios (e.g. `raw.encodeQr`). */
  key: string;
  /** Human label for the table. */
  label: string;
  /** Operations (or requests) per second. */
  rate: number;
  /** What one operation is: `matrix`, `req`, `png`... */
  unit: string;
  /** Operations counted in the measured window. */
  count: number;
  /** Length of the measured window (warm-up excluded), ms. */
  windowMs: number;
  /** CPU the measured process used over the window, as % of one core (may exceed 100: GC and pool threads). */
  cpuPercent?: number;
  /** CPU microseconds the measured process spent per operation. */
  cpuMicrosPerOp?: number;
  /** Latency percentiles (ms) for HTTP measurements. */
  latencyMs?: { p50: number; p99: number; max: number };
  /** CPU the load generator (this process) used over the window, % of one core. */
  clientCpuPercent?: number;
  /** CPU that other processes on the machine used over the window, % of one core (contamination). */
  otherCpuPercent?: number;
  /** Non-fatal problems (errors, unexpected statuses) seen while measuring. */
  errors?: number;
  note?: string;
}

/** A pass/fail rule a benchmark checks against its own figures from the same run. */
export interface BudgetCheck {
  name: string;
  met: boolean;
  /** Why the verdict cannot be trusted (a disturbed or drifting measurement); undefined when it can. */
  unreliable?: string;
  detail: string;
}

export interface BenchReport {
  title: string;
  /** Lines printed before the tables (machine, URL, settings). */
  context: string[];
  /** Tables of text lines, already formatted. */
  sections: { heading: string; lines: string[] }[];
  measurements: Measurement[];
  budgets: BudgetCheck[];
}

/** A benchmark module `bench/run.ts` can run. Add new ones to the list in run.ts. */
export interface Benchmark {
  /** Short name used to select it: `npm run bench -- <name>`. */
  name: string;
  description: string;
  run(): Promise<BenchReport>;
}
