import { performance } from 'node:perf_hooks';
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
    return { count, windowMs: last - start, cpu: cpuMicros() - cpu0, machine: machineBusyMicros() - machine0 };
  };
  await phase(o.warmupMs);
  const { count, windowMs, cpu, machine } = await phase(o.durationMs);
  return toMeasurement(key, label, unit, count, windowMs, cpu, machine);
}
