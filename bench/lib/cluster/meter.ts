/**
 * Measured windows of the cluster benchmark (bench/cluster.ts): the CPU of every process of the run (from
 * /proc), what the rest of the machine used, the commands Redis ran and the nodes sent, the statements and
 * write transactions PostgreSQL ran, between two readings.
 */
import { fetchOnce } from '../load/load.js';
import type { BenchPostgres, PgReading } from '../processes/postgres.js';
import type { RedisReading } from '../processes/redis.js';
import type { RedisPart } from '../processes/redis-cluster.js';
import { deltaOf, sumOf } from '../measure/counter-maps.js';
import { machineBusyMicros, otherPercent } from '../measure/sysload.js';

/** A process whose CPU the benchmark counts as its own. */
export interface Probe {
  name: string;
  cpu: () => number | Promise<number>;
}

/** What a measured window saw: CPU per probe, the rest of the machine, Redis and PostgreSQL work. */
export interface Window {
  ms: number;
  cpuMicros: Map<string, number>;
  otherPercent: number;
  /** Summed over every Redis process read (the one Redis and the cluster's shards); `parts` each one's share. */
  redis?: { calls: Map<string, number>; cpuMicros: number; memory: number; keys: number; parts?: RedisPart[] };
  pg?: { calls: Map<string, number>; writeXacts: number; cpuMicros: number; cpuByKind: Map<string, number>; walBytes: number; walSyncs: number; walSyncMs: number };
  /** Commands the nodes sent to Redis, by kind, summed over the nodes. */
  sent: Map<string, number>;
}

/** Readings at a window's start; `close` turns them into a Window. */
export class Meter {
  constructor(
    private readonly probes: Probe[],
    private readonly redis: { read(): Promise<RedisReading & { parts?: RedisPart[] }> } | undefined,
    private readonly pg: BenchPostgres | undefined,
    private readonly nodePorts: number[],
  ) {}

  private async sentCounts(): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    for (const port of this.nodePorts) {
      const counts = JSON.parse((await fetchOnce(port, 'GET', '/__bench/redis-counts')).body.toString()) as Record<string, number>;
      for (const [k, v] of Object.entries(counts)) out.set(k, (out.get(k) ?? 0) + v);
    }
    return out;
  }

  async open(): Promise<() => Promise<Window>> {
    const sent0 = await this.sentCounts();
    const redis0 = await this.redis?.read();
    const pg0 = await this.pg?.read();
    const cpu0 = await Promise.all(this.probes.map((p) => p.cpu()));
    const machine0 = machineBusyMicros();
    const t0 = performance.now();
    return async () => {
      const cpu1 = await Promise.all(this.probes.map((p) => p.cpu()));
      const machine = machineBusyMicros() - machine0;
      const windowMs = performance.now() - t0;
      const redis1 = await this.redis?.read();
      const pg1 = await this.pg?.read();
      const sent1 = await this.sentCounts();
      const cpuMicros = new Map(this.probes.map((p, i) => [p.name, cpu1[i]! - cpu0[i]!]));
      return {
        ms: windowMs,
        cpuMicros,
        otherPercent: otherPercent(machine, sumOf(cpuMicros), windowMs),
        redis: redis0 && redis1 ? redisDelta(redis0, redis1) : undefined,
        pg: pg0 && pg1 ? pgDelta(pg0, pg1) : undefined,
        sent: deltaOf(sent0, sent1),
      };
    };
  }
}

const redisDelta = (a: RedisReading & { parts?: RedisPart[] }, b: RedisReading & { parts?: RedisPart[] }) => ({
  calls: deltaOf(a.calls, b.calls),
  cpuMicros: b.cpuMicros - a.cpuMicros,
  memory: b.usedMemory - a.usedMemory,
  keys: b.keys - a.keys,
  ...(a.parts && b.parts ? { parts: b.parts.map((p, i) => ({ name: p.name, calls: p.calls - (a.parts![i]?.calls ?? 0), cpuMicros: p.cpuMicros - (a.parts![i]?.cpuMicros ?? 0) })) } : {}),
});
const pgDelta = (a: PgReading, b: PgReading) => ({
  calls: deltaOf(a.calls, b.calls),
  writeXacts: b.writeXacts - a.writeXacts,
  cpuMicros: b.cpuMicros - a.cpuMicros,
  cpuByKind: deltaOf(a.cpuByKind, b.cpuByKind),
  walBytes: b.walBytes - a.walBytes,
  walSyncs: b.walSyncs - a.walSyncs,
  walSyncMs: b.walSyncMs - a.walSyncMs,
});

export const cpuPercent = (w: Window, name: string): number => ((w.cpuMicros.get(name) ?? 0) / (w.ms * 1000)) * 100;
/** SQL statements in a window, transaction control (BEGIN/COMMIT/ROLLBACK) left out. */
export const sqlStatements = (calls: Map<string, number>): number => {
  let n = 0;
  for (const [q, c] of calls) if (!/^\s*(begin|commit|rollback|start transaction)/i.test(q)) n += c;
  return n;
};
/** A statement's text cut to its verb and table, for the tables. */
export const shortSql = (q: string): string => {
  const text = q.replace(/\s+/g, ' ').trim();
  if (/^(begin|commit|rollback)/i.test(text)) return text.toUpperCase();
  const verb = /^(select|insert|update|delete|with)/i.exec(text)?.[1]?.toUpperCase() ?? text.split(' ')[0]!;
  const table = /(?:from|into|update)\s+"?([a-z_]+)"?/i.exec(text)?.[1];
  return `${verb} ${table ?? ''}`.trim();
};


const addInto = (into: Map<string, number>, from: Map<string, number>): void => {
  for (const [k, v] of from) into.set(k, (into.get(k) ?? 0) + v);
};

/** Several windows as one: times, CPU, commands and statements summed (`otherPercent`: time-weighted). */
export function mergeWindows(windows: readonly Window[]): Window {
  const out: Window = { ms: 0, cpuMicros: new Map(), otherPercent: 0, sent: new Map() };
  for (const w of windows) {
    out.otherPercent += w.otherPercent * w.ms;
    out.ms += w.ms;
    addInto(out.cpuMicros, w.cpuMicros);
    addInto(out.sent, w.sent);
    if (w.redis) {
      out.redis ??= { calls: new Map(), cpuMicros: 0, memory: 0, keys: 0 };
      addInto(out.redis.calls, w.redis.calls);
      out.redis.cpuMicros += w.redis.cpuMicros;
      out.redis.memory += w.redis.memory;
      out.redis.keys += w.redis.keys;
      for (const p of w.redis.parts ?? []) {
        const parts = (out.redis.parts ??= []);
        const into = parts.find((q) => q.name === p.name);
        if (into) {
          into.calls += p.calls;
          into.cpuMicros += p.cpuMicros;
        } else parts.push({ ...p });
      }
    }
    if (w.pg) {
      out.pg ??= { calls: new Map(), writeXacts: 0, cpuMicros: 0, cpuByKind: new Map(), walBytes: 0, walSyncs: 0, walSyncMs: 0 };
      addInto(out.pg.calls, w.pg.calls);
      addInto(out.pg.cpuByKind, w.pg.cpuByKind);
      out.pg.writeXacts += w.pg.writeXacts;
      out.pg.cpuMicros += w.pg.cpuMicros;
      out.pg.walBytes += w.pg.walBytes;
      out.pg.walSyncs += w.pg.walSyncs;
      out.pg.walSyncMs += w.pg.walSyncMs;
    }
  }
  out.otherPercent = out.ms > 0 ? out.otherPercent / out.ms : 0;
  return out;
}
