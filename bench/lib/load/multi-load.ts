/**
 * A closed-loop HTTP load generator over several servers at once (bench/cluster.ts: QR requests spread
 * over the nodes of a cluster, as a round-robin load balancer would): keep-alive connections to each
 * target, each sending its next request when the previous answer is fully read, every request built by
 * the caller (its own body and cookie). Like bench/lib/load/load.ts it uses raw-socket connections that read
 * only Content-Length answers (bench/lib/load/keep-alive-connection.ts), to stay cheap next to the servers on
 * 2 cores. Loopback only.
 */
import { performance } from 'node:perf_hooks';
import type { HttpAnswer } from './http-answer-reader.js';
import { KeepAliveConnection } from './keep-alive-connection.js';
import { percentile } from '../measure/stats.js';

export interface MultiLoadOptions {
  /** Servers and how many keep-alive connections each gets. */
  targets: { port: number; connections: number }[];
  /** Request `i` to `port`, whole (head and body). */
  request: (i: number, port: number) => Buffer;
  expectStatus: number;
  /** Checks an answer's body now and then (every 64th); returns an error text or undefined. */
  check?: (body: Buffer) => string | undefined;
  warmupMs: number;
  durationMs: number;
  /** Called when the measured window opens and when it closes (CPU and counter readings). */
  onWindow?: { open: () => Promise<void>; close: () => Promise<void> };
}

export interface MultiLoadResult {
  count: number;
  windowMs: number;
  rate: number;
  /** Answers per target port in the window. */
  perTarget: Map<number, number>;
  p50: number;
  p99: number;
  errors: number;
  firstError: string | undefined;
}

/** Runs a warm-up, then the measured window, on the same connections. */
export async function runMultiLoad(o: MultiLoadOptions): Promise<MultiLoadResult> {
  const lanes: { port: number; connection: KeepAliveConnection }[] = [];
  for (const t of o.targets) for (let k = 0; k < t.connections; k++) lanes.push({ port: t.port, connection: await KeepAliveConnection.open(t.port) });
  let issued = 0;
  let errors = 0;
  let firstError: string | undefined;
  const phase = async (ms: number, record: boolean) => {
    const end = performance.now() + ms;
    const latencies: number[] = [];
    const perTarget = new Map<number, number>();
    let count = 0;
    const run = async ({ port, connection }: { port: number; connection: KeepAliveConnection }): Promise<void> => {
      while (performance.now() < end) {
        const i = issued++;
        const sent = performance.now();
        let answer: HttpAnswer;
        try {
          answer = await connection.send(o.request(i, port));
        } catch (err) {
          errors++;
          firstError ??= (err as Error).message;
          return;
        }
        const problem = answer.status !== o.expectStatus ? `status ${answer.status}: ${answer.body.toString('utf8', 0, 200)}` : (i & 63) === 0 ? o.check?.(answer.body) : undefined;
        if (problem !== undefined) {
          errors++;
          firstError ??= problem;
          continue;
        }
        if (record) {
          count++;
          latencies.push(performance.now() - sent);
          perTarget.set(port, (perTarget.get(port) ?? 0) + 1);
        }
      }
    };
    const started = performance.now();
    await Promise.all(lanes.map(run));
    return { count, latencies, perTarget, windowMs: performance.now() - started };
  };
  try {
    await phase(o.warmupMs, false);
    const warmErrors = errors;
    await o.onWindow?.open();
    const measured = await phase(o.durationMs, true);
    await o.onWindow?.close();
    return {
      count: measured.count,
      windowMs: measured.windowMs,
      rate: (measured.count * 1000) / measured.windowMs,
      perTarget: measured.perTarget,
      p50: percentile(measured.latencies, 50),
      p99: percentile(measured.latencies, 99),
      errors: errors - warmErrors,
      firstError,
    };
  } finally {
    for (const lane of lanes) lane.connection.close();
  }
}
