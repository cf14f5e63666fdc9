/**
 * A private Redis Cluster for the cluster benchmark (bench/cluster.ts, `BENCH_REDIS_CLUSTER=N`), started by
 * test/helpers/redis-cluster.ts (N primaries, no replicas, foreground children on loopback, stopped by pid),
 * with `cluster-require-full-coverage no` on every primary as docs/redis.md "Redis Cluster" advises. And the
 * benchmark's view of all its Redis processes at once (the one Redis of `redisUrl` and every shard): their
 * summed readings, each one's share kept apart, and their summed CPU.
 */
import { Redis } from 'ioredis';
import { startRedisCluster } from '../../../test/helpers/redis-cluster.js';
import { procCpuMicros } from '../measure/proc-cpu.js';
import { sumOf } from '../measure/counter-maps.js';
import { readRedis, type BenchRedis, type RedisReading } from './redis.js';

/** The running cluster: its seed URLs (every primary) and each shard's INFO and CPU readings. */
export interface BenchRedisCluster {
  urls: string[];
  pids: number[];
  /** One reading per shard, in the order of `urls`. */
  readShards(): Promise<RedisReading[]>;
  stop(): Promise<void>;
}

/** Primaries of the streams' Redis Cluster from `BENCH_REDIS_CLUSTER` (unset or 0: none, the streams on the one Redis). */
export function clusterShardsFromEnv(): number {
  const raw = process.env.BENCH_REDIS_CLUSTER ?? '';
  if (raw === '' || raw === '0') return 0;
  const n = Number(raw);
  // redis-cli --cluster create wants at least 3 primaries.
  if (!Number.isInteger(n) || n < 3 || n > 16) throw new Error(`BENCH_REDIS_CLUSTER must be an integer from 3 to 16 (or 0/unset), not ${raw}`);
  return n;
}


export async function startBenchRedisCluster(shards: number): Promise<BenchRedisCluster> {
  const server = await startRedisCluster(shards);
  const readers: Redis[] = [];
  const stop = async (): Promise<void> => {
    for (const r of readers) r.disconnect();
    await server.stop();
  };
  try {
    const pids = server.pids().map((pid, i) => {
      if (pid === undefined) throw new Error(`shard ${i} has no pid`);
      return pid;
    });
    for (const seed of server.seeds) {
      const client = new Redis({ ...seed, lazyConnect: true, maxRetriesPerRequest: 1 });
      client.on('error', () => undefined);
      await client.connect();
      readers.push(client);
      // Else one stalled shard stops every other (CLUSTERDOWN) once the others flag it failed.
      await client.config('SET', 'cluster-require-full-coverage', 'no');
    }
    return {
      urls: server.urls,
      pids,
      readShards: () => Promise.all(readers.map((client, i) => readRedis(client, pids[i]!))),
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** One Redis process's part of a reading: what it executed (all commands) and its CPU. */
export interface RedisPart {
  name: string;
  calls: number;
  cpuMicros: number;
}

/** All the benchmark's Redis processes as one: readings summed (`parts` per process), CPU summed. */
export interface RedisFleet {
  /** 1 + the shards. */
  names: string[];
  read(): Promise<RedisReading & { parts: RedisPart[] }>;
  cpuMicros(): number;
}

/** The one Redis of `redisUrl` and, when there is one, every shard of the streams' cluster. */
export function redisFleet(one: BenchRedis, cluster: BenchRedisCluster | undefined): RedisFleet {
  const names = ['redis (redisUrl)', ...(cluster?.urls.map((_, i) => `shard ${i + 1}`) ?? [])];
  const pids = [one.pid, ...(cluster?.pids ?? [])];
  return {
    names,
    async read() {
      const all = [await one.read(), ...((await cluster?.readShards()) ?? [])];
      const sum = (pick: (r: RedisReading) => Map<string, number>): Map<string, number> => {
        const out = new Map<string, number>();
        for (const r of all) for (const [k, v] of pick(r)) out.set(k, (out.get(k) ?? 0) + v);
        return out;
      };
      return {
        calls: sum((r) => r.calls),
        usec: sum((r) => r.usec),
        cpuMicros: all.reduce((s, r) => s + r.cpuMicros, 0),
        usedMemory: all.reduce((s, r) => s + r.usedMemory, 0),
        keys: all.reduce((s, r) => s + r.keys, 0),
        parts: all.map((r, i) => ({ name: names[i]!, calls: sumOf(r.calls), cpuMicros: r.cpuMicros })),
      };
    },
    cpuMicros: () => pids.reduce((s, pid) => s + procCpuMicros(pid), 0),
  };
}
