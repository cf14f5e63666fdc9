import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { connectRedis, type RedisConnection } from '../../src/redis/connection.js';
import { freePort } from './service.js';
import { acceptsConnections } from './ports.js';
import { spawnWatched, terminate } from './child.js';

/** A private redis-server (Debian's `redis-server`) on loopback, a foreground child of the test process. */
export interface RedisServer {
  port: number;
  /** `redis://127.0.0.1:<port>` */
  url: string;
  /** pid of the running server (undefined while it is stopped), for readings of its CPU in /proc. */
  pid(): number | undefined;
  /** SIGTERM, wait for exit, start again on the same port (nothing is kept: no RDB, no AOF). */
  restart(): Promise<void>;
  /** SIGTERM, wait for exit (SIGKILL after 5 s); `start()` brings it back on the same port. */
  stopServer(): Promise<void>;
  start(): Promise<void>;
  /** SIGSTOP: the server keeps its connections open and answers nothing (a stall), until `resume`. */
  pause(): void;
  /** SIGCONT after `pause`: the server runs what it was sent meanwhile. */
  resume(): void;
  /** Stops the server and removes its directory. */
  stop(): Promise<void>;
}

/** Starts `redis-server --port P --save '' --appendonly no --bind 127.0.0.1` in a temporary directory. */
export async function startRedis(): Promise<RedisServer> {
  const dir = mkdtempSync(join(tmpdir(), 'tabwire-redis-'));
  const port = await freePort();
  let child: ChildProcess | undefined = await launch(port, dir);
  const server: RedisServer = {
    port,
    url: `redis://127.0.0.1:${port}`,
    pid: () => child?.pid,
    async restart() {
      await server.stopServer();
      await server.start();
    },
    async stopServer() {
      // A paused server would not act on SIGTERM.
      child?.kill('SIGCONT');
      if (child) await terminate(child);
      child = undefined;
    },
    pause() {
      child?.kill('SIGSTOP');
    },
    resume() {
      child?.kill('SIGCONT');
    },
    async start() {
      if (!child) child = await launch(port, dir);
    },
    async stop() {
      await server.stopServer();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return server;
}

async function launch(port: number, dir: string): Promise<ChildProcess> {
  const args = ['--port', String(port), '--save', '', '--appendonly', 'no', '--bind', '127.0.0.1', '--dir', dir, '--daemonize', 'no'];
  // If the test process dies without stop(), take Redis with it (best effort).
  const { child, output } = spawnWatched('redis-server', args);
  const deadline = Date.now() + 15_000;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`redis-server exited (${child.exitCode ?? child.signalCode}): ${output()}`);
    if (await acceptsConnections(port)) return child;
    if (Date.now() > deadline) {
      await terminate(child);
      throw new Error(`redis-server did not open port ${port}: ${output()}`);
    }
    await new Promise((r) => setTimeout(r, 25));
  }
}



/** A key prefix no other test file or call uses: test files share the run's Redis. */
export const testPrefix = (label: string): string => `test:${label}:${randomBytes(4).toString('hex')}:`;

/** A connection to `url` under `prefix` (nodes of one simulated cluster share a prefix). */
export function testConnection(url: string, prefix: string): RedisConnection {
  return connectRedis(url, pino({ level: 'silent' }), { prefix, name: 'tabwire-test' });
}

/** The run's shared Redis (test/setup/redis.ts): `inject('redisUrl')` in a test file. */
declare module 'vitest' {
  export interface ProvidedContext {
    redisUrl: string;
  }
}
