/**
 * A private Redis for the cluster benchmark (bench/cluster.ts), started by test/helpers/redis.ts (a
 * foreground child on loopback in a temporary directory, stopped by pid and removed afterwards). Plus what
 * the benchmark reads from it: the commands it ran (INFO commandstats), its memory and CPU (/proc), and PING
 * round trips that show it stalling.
 */
import { Redis } from 'ioredis';
import { startRedis } from '../../../test/helpers/redis.js';
import { procCpuMicros } from '../measure/proc-cpu.js';
import { percentile } from '../measure/stats.js';

/** What Redis ran since it started: calls per command (commands inside Lua scripts counted too), and its CPU. */
export interface RedisReading {
  calls: Map<string, number>;
  /** Server-side time per command, µs (a script's includes its inner commands). */
  usec: Map<string, number>;
  cpuMicros: number;
  usedMemory: number;
  keys: number;
}

/** The running Redis: where to reach it, its readings, and how to stop it. */
export interface BenchRedis {
  port: number;
  url: string;
  pid: number;
  read(): Promise<RedisReading>;
  stop(): Promise<void>;
}

/** Redis as test/helpers/redis.ts starts it (`--save '' --appendonly no`, loopback), and a connection that reads it. */
export async function startBenchRedis(): Promise<BenchRedis> {
  const server = await startRedis();
  let reader: Redis | undefined;
  const stop = async (): Promise<void> => {
    reader?.disconnect();
    await server.stop();
  };
  try {
    const url = server.url;
    const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
    client.on('error', () => undefined);
    await client.connect();
    reader = client;
    const pid = server.pid();
    if (pid === undefined) throw new Error('redis-server has no pid');
    return {
      port: server.port,
      url,
      pid,
      read: () => readRedis(client, pid),
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/**
 * Redis PING round trips from this process, one every `everyMs`, for `ms`, on a connection of its own: a
 * long one means Redis (single-threaded) was busy with something else, such as a pipeline of scripts.
 */
export async function pingRedis(url: string, ms: number, everyMs = 5): Promise<{ count: number; p50: number; p99: number; max: number }> {
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  client.on('error', () => undefined);
  await client.connect();
  const rtts: number[] = [];
  try {
    const end = performance.now() + ms;
    while (performance.now() < end) {
      const t = performance.now();
      await client.ping();
      rtts.push(performance.now() - t);
      await new Promise((r) => setTimeout(r, everyMs));
    }
  } finally {
    client.disconnect();
  }
  return { count: rtts.length, p50: percentile(rtts, 50), p99: percentile(rtts, 99), max: percentile(rtts, 100) };
}

/** Reads INFO commandstats and memory, DBSIZE and /proc CPU of one Redis over `client` (its own INFO and DBSIZE left out). */
export async function readRedis(client: Redis, pid: number): Promise<RedisReading> {
  const [stats, memory, keys] = await Promise.all([client.info('commandstats'), client.info('memory'), client.dbsize()]);
  const calls = new Map<string, number>();
  const usec = new Map<string, number>();
  for (const m of stats.matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)) {
    // The benchmark's own readings are not the nodes' load.
    if (m[1] === 'info' || m[1] === 'dbsize') continue;
    calls.set(m[1]!, Number(m[2]));
    usec.set(m[1]!, Number(m[3]));
  }
  return { calls, usec, cpuMicros: procCpuMicros(pid), usedMemory: Number(/^used_memory:(\d+)/m.exec(memory)?.[1] ?? 0), keys };
}
