import { request as httpRequest } from 'node:http';
import { performance } from 'node:perf_hooks';
import { KeepAliveConnection } from './keep-alive-connection.js';
import { percentile } from '../measure/stats.js';
import { machineBusyMicros, otherPercent } from '../measure/sysload.js';
import type { Measurement } from '../measure/types.js';

export interface LoadOptions {
  key: string;
  label: string;
  /** Loopback only: the generator refuses anything else. */
  host: '127.0.0.1';
  port: number;
  method: 'GET' | 'POST';
  /** Path of request `i` (lets a run cycle through prepared codes). */
  path: (i: number) => string;
  headers?: Record<string, string>;
  body?: Buffer;
  /** Status every answer must have; others count as errors. */
  expectStatus: number;
  connections: number;
  warmupMs: number;
  durationMs: number;
  /** Hard cap on requests in the whole run (warm-up included). */
  maxRequests?: number;
  /** CPU microseconds used so far by the server process (asked at the window's start and end). */
  serverCpuMicros?: () => Promise<number>;
}

const cpuMicros = (): number => {
  const { user, system } = process.cpuUsage();
  return user + system;
};

/**
 * A small closed-loop HTTP load generator: `connections` keep-alive connections, each sending its
 * next request when the previous answer is fully read. Requests completed inside the measured
 * window (after the warm-up) are counted; latency is sampled over that window as well.
 */
export async function runLoad(o: LoadOptions): Promise<Measurement> {
  if (o.host !== '127.0.0.1') throw new Error('load generator is loopback only');
  const maxRequests = o.maxRequests ?? 10_000_000;
  const fixedHeaders = Object.entries({ host: `${o.host}:${o.port}`, ...o.headers })
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('');
  const lengthHeader = o.body ? `content-length: ${o.body.length}\r\n` : '';
  const requestBytes = (path: string): Buffer => {
    const head = Buffer.from(`${o.method} ${path} HTTP/1.1\r\n${fixedHeaders}${lengthHeader}\r\n`, 'latin1');
    return o.body ? Buffer.concat([head, o.body]) : head;
  };
  // Requests whose path never changes are built once.
  const constantPath = o.path(0) === o.path(1) ? requestBytes(o.path(0)) : undefined;

  const connections = await Promise.all(Array.from({ length: o.connections }, () => KeepAliveConnection.open(o.port)));

  const t0 = performance.now();
  const windowStart = t0 + o.warmupMs;
  const windowEnd = windowStart + o.durationMs;
  let issued = 0;
  let counted = 0;
  let errors = 0;
  let firstError: string | undefined;
  const latencies: number[] = [];

  // CPU samples at the window's edges (server's through IPC, ours directly). Taken by a timer or
  // by the first lane that sees the edge passed, whichever comes first: timers may fire late.
  let serverCpuStart: Promise<number> | undefined;
  let serverCpuEnd: Promise<number> | undefined;
  let clientCpuStart: number | undefined;
  let clientCpuEnd: number | undefined;
  let machineStart = 0;
  let machineEnd = 0;
  const sampleStart = (): void => {
    if (clientCpuStart !== undefined) return;
    clientCpuStart = cpuMicros();
    machineStart = machineBusyMicros();
    serverCpuStart = o.serverCpuMicros?.();
  };
  const sampleEnd = (): void => {
    if (clientCpuStart === undefined || clientCpuEnd !== undefined) return;
    clientCpuEnd = cpuMicros();
    machineEnd = machineBusyMicros();
    serverCpuEnd = o.serverCpuMicros?.();
  };
  const startTimer = setTimeout(sampleStart, o.warmupMs);
  const endTimer = setTimeout(sampleEnd, o.warmupMs + o.durationMs);

  const lane = async (connection: KeepAliveConnection): Promise<void> => {
    while (issued < maxRequests && performance.now() < windowEnd) {
      const i = issued++;
      const bytes = constantPath ?? requestBytes(o.path(i));
      const sent = performance.now();
      let status: number;
      try {
        status = (await connection.send(bytes)).status;
      } catch (err) {
        // A broken connection ends this lane; the run goes on with the others.
        errors++;
        firstError ??= (err as Error).message;
        return;
      }
      const done = performance.now();
      if (done >= windowStart) sampleStart();
      if (done >= windowEnd) sampleEnd();
      const ok = status === o.expectStatus;
      if (!ok) {
        errors++;
        firstError ??= `status ${status}`;
      }
      if (done >= windowStart && done <= windowEnd) {
        if (ok) counted++;
        latencies.push(done - sent);
      }
    }
  };

  try {
    await Promise.all(connections.map(lane));
  } finally {
    clearTimeout(startTimer);
    clearTimeout(endTimer);
    for (const c of connections) c.close();
  }
  // A run cut short (maxRequests, broken connections) has no full window: no CPU figures then.
  if (performance.now() >= windowEnd) sampleEnd();
  const serverCpu = serverCpuStart && serverCpuEnd ? (await serverCpuEnd) - (await serverCpuStart) : undefined;
  const clientCpu = clientCpuStart !== undefined && clientCpuEnd !== undefined ? clientCpuEnd - clientCpuStart : undefined;
  const windowMs = o.durationMs;
  return {
    key: o.key,
    label: o.label,
    unit: 'req',
    count: counted,
    windowMs,
    rate: (counted * 1000) / windowMs,
    cpuPercent: serverCpu === undefined ? undefined : (serverCpu / (windowMs * 1000)) * 100,
    cpuMicrosPerOp: serverCpu === undefined || counted === 0 ? undefined : serverCpu / counted,
    clientCpuPercent: clientCpu === undefined ? undefined : (clientCpu / (windowMs * 1000)) * 100,
    otherCpuPercent:
      serverCpu === undefined || clientCpu === undefined ? undefined : otherPercent(machineEnd - machineStart, serverCpu + clientCpu, windowMs),
    latencyMs: { p50: percentile(latencies, 50), p99: percentile(latencies, 99), max: percentile(latencies, 100) },
    errors,
    note: firstError === undefined ? undefined : `${errors} errors, first: ${firstError}`,
  };
}

/** One request through node:http, answer fully read; for setup and sanity checks outside the measured runs. */
export function fetchOnce(
  port: number,
  method: 'GET' | 'POST',
  path: string,
  body?: unknown,
  timeoutMs = 10_000,
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }> {
  const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port,
        method,
        path,
        headers: payload ? { 'content-type': 'application/json', 'content-length': payload.length } : {},
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
        res.on('error', reject);
      },
    );
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`${method} ${path} timed out`)));
    req.on('error', reject);
    req.end(payload);
  });
}
