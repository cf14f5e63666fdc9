import { performance } from 'node:perf_hooks';
import { median } from './stats.js';
import { machineBusyMicros, otherPercent } from './sysload.js';
import type { Measurement } from './types.js';

export interface TimingOptions {
  warmupMs: number;
  durationMs: number;
  /** Hard cap on operations per phase, so a loop is bounded even if the clock misbehaves. */
  maxOps?: number;
}

const DEFAULT_MAX_OPS = 50_000_000;

const cpuMicros = (): number => {
  const { user, system } = process.cpuUsage();
  return user + system;
};

function toMeasurement(
  key: string,
  label: string,
  unit: string,
  count: number,
  windowMs: number,
  cpu: number,
  machine: number,
): Measurement {
  return {
    key,
    label,
    unit,
    count,
    windowMs,
    rate: (count * 1000) / windowMs,
    cpuPercent: (cpu / (windowMs * 1000)) * 100,
    cpuMicrosPerOp: count > 0 ? cpu / count : undefined,
    otherCpuPercent: otherPercent(machine, cpu, windowMs),
  };
}

/**
 * Rate of a synchronous operation on this thread: a warm-up phase, then as many calls as fit in
 * `durationMs`. `op(i)` gets a running index so callers can cycle through prepared inputs.
 */
export function measureSync(key: string, label: string, unit: string, op: (i: number) => unknown, o: TimingOptions): Measurement {
  const maxOps = o.maxOps ?? DEFAULT_MAX_OPS;
  let sink: unknown;
  let i = 0;
  const warmEnd = performance.now() + o.warmupMs;
  for (let n = 0; n < maxOps && performance.now() < warmEnd; n++) sink = op(i++);

  const cpu0 = cpuMicros();
  const machine0 = machineBusyMicros();
  const start = performance.now();
  const end = start + o.durationMs;
  let count = 0;
  let now = start;
  while (count < maxOps && now < end) {
    sink = op(i++);
    count++;
    now = performance.now();
  }
  const cpu = cpuMicros() - cpu0;
  const machine = machineBusyMicros() - machine0;
  if (sink === Symbol.for('never')) console.log(sink); // keeps the results observable
  return toMeasurement(key, label, unit, count, now - start, cpu, machine);
}

/**
 * Rate of an asynchronous operation, `concurrency` calls in flight (1 = one after another).
 * CPU is the whole process's, so work moved to libuv's pool (async zlib) shows up above 100%.
 */
export async function measureAsync(
  key: string,
  label: string,
  unit: string,
  op: (i: number) => Promise<unknown>,
  o: TimingOptions & { concurrency?: number },
): Promise<Measurement> {
  const maxOps = o.maxOps ?? DEFAULT_MAX_OPS;
  const concurrency = o.concurrency ?? 1;
  let i = 0;
  const phase = async (ms: number): Promise<{ count: number; windowMs: number; cpu: number; machine: number }> => {
    const cpu0 = cpuMicros();
    const machine0 = machineBusyMicros();
    const start = performance.now();
    const end = start + ms;
    let count = 0;
    let last = start;
    const lane = async (): Promise<void> => {
      while (count < maxOps && performance.now() < end) {
        await op(i++);
        count++;
        last = performance.now();
      }
    };
    await Promise.all(Array.from({ length: concurrency }, lane));
    // Up to the last completion, so time spent after the deadline is not counted; the whole phase if none completed.
    const windowMs = count > 0 ? last - start : performance.now() - start;
    return { count, windowMs, cpu: cpuMicros() - cpu0, machine: machineBusyMicros() - machine0 };
  };
  await phase(o.warmupMs);
  const { count, windowMs, cpu, machine } = await phase(o.durationMs);
  return toMeasurement(key, label, unit, count, windowMs, cpu, machine);
}

/** One operation for `measureInterleaved`. */
export interface OperationSpec {
  key: string;
  label: string;
  unit: string;
  op: (i: number) => unknown;
  /** `op` returns a promise that must settle before the next call. */
  async?: boolean;
}

export interface InterleaveOptions {
  /** Slices per operation; the reported rate is the median over them. */
  rounds: number;
  sliceMs: number;
  /** Warm-up before each operation's first slice. */
  warmupMs: number;
  /** Slices where other processes used more than this (% of a core) are set aside when enough others are left. */
  otherLimitPercent: number;
}

/**
 * Rates of several operations measured in short slices taken in turn (A B C A B C ...), each
 * reported as the median over its slices. A virtual machine's speed drifts with its neighbours;
 * interleaving spreads a slow period over all operations instead of spoiling one of them, so the
 * ratios between operations hold even when the absolute rates move.
 */
export async function measureInterleaved(specs: OperationSpec[], o: InterleaveOptions): Promise<Measurement[]> {
  const slices = specs.map((): Measurement[] => []);
  for (let round = 0; round < o.rounds; round++) {
    for (const [n, spec] of specs.entries()) {
      const timing = { warmupMs: round === 0 ? o.warmupMs : 0, durationMs: o.sliceMs };
      const slice = spec.async
        ? await measureAsync(spec.key, spec.label, spec.unit, (i) => spec.op(i) as Promise<unknown>, timing)
        : measureSync(spec.key, spec.label, spec.unit, spec.op, timing);
      slices[n]!.push(slice);
    }
  }
  return specs.map((spec, n) => {
    const all = slices[n]!;
    const quiet = all.filter((s) => (s.otherCpuPercent ?? 0) <= o.otherLimitPercent);
    const used = quiet.length >= Math.ceil(o.rounds / 2) ? quiet : all;
    const count = used.reduce((sum, s) => sum + s.count, 0);
    const windowMs = used.reduce((sum, s) => sum + s.windowMs, 0);
    const cpu = used.reduce((sum, s) => sum + (s.cpuMicrosPerOp ?? 0) * s.count, 0);
    const other = used.reduce((sum, s) => sum + (s.otherCpuPercent ?? 0) * s.windowMs, 0) / windowMs;
    return {
      key: spec.key,
      label: spec.label,
      unit: spec.unit,
      count,
      windowMs,
      rate: median(used.map((s) => s.rate)),
      cpuPercent: (cpu / (windowMs * 1000)) * 100,
      cpuMicrosPerOp: count > 0 ? cpu / count : undefined,
      otherCpuPercent: other,
      note: used.length < all.length ? `${all.length - used.length} of ${all.length} slices set aside (other processes busy)` : undefined,
    };
  });
}
