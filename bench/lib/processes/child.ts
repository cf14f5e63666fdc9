import { createServer } from 'node:net';
import type { ChildReply, ParentRequest } from '../../servers/protocol.js';
import { spawnTracked, stopTracked } from './child-registry.js';
import { awaitReply } from './child-reply.js';
import type { Measurement } from '../measure/types.js';

/** A server running in a child process of this one, on a loopback port. */
export interface ChildServer {
  readonly name: string;
  readonly pid: number;
  readonly port: number;
  /** user + system CPU microseconds the child has used so far. */
  cpuMicros(): Promise<number>;
  /** The child's reference operation (see ChildOptions.reference), measured inside it. */
  reference(arg: string, timing: { warmupMs: number; durationMs: number }): Promise<Measurement>;
  /** SIGTERM by pid, SIGKILL if it has not exited after a grace period. Idempotent. */
  stop(): Promise<void>;
}

/** A free loopback port (closed again before use; fine on one machine). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/**
 * Starts `entry` (a bench/servers/*.ts file) as a foreground child with an IPC channel and waits
 * for it to report that it listens. Args are passed on its command line.
 */
export async function startChild(
  name: string,
  entry: URL,
  args: string[],
  options: { nodeArgs?: string[]; readyTimeoutMs?: number } = {},
): Promise<ChildServer> {
  const readyTimeoutMs = options.readyTimeoutMs ?? 30_000;
  // nodeArgs: e.g. ['--cpu-prof'] to profile a server while it is measured.
  const child = spawnTracked(entry, args, options.nodeArgs);
  // A failed spawn leaves no pid and is reported below; without a listener it would crash the run.
  child.on('error', () => {});
  const pid = child.pid;
  const stop = (): Promise<void> => stopTracked(child);

  try {
    if (pid === undefined) throw new Error(`${name}: child process did not start`);
    const port = await awaitReply<ChildReply, number>(child, {
      timeoutMs: readyTimeoutMs,
      timeoutError: () => new Error(`${name}: not ready after ${readyTimeoutMs} ms`),
      exitError: (code, signal) => new Error(`${name}: exited before it was ready (code ${code}, signal ${signal})`),
      judge: (m) => {
        if (m.type === 'ready') return { value: m.port };
        if (m.type === 'failed') return { error: new Error(`${name}: ${m.message}`) };
        return undefined;
      },
    });

    let nextId = 0;
    /** Sends `request` (with a fresh id) and resolves with the reply of the same type and id. */
    const ask = <T extends ChildReply>(make: (id: number) => ParentRequest, timeoutMs: number): Promise<T> => {
      const request = make(nextId++);
      return awaitReply<ChildReply, T>(child, {
        request,
        timeoutMs,
        timeoutError: () => new Error(`${name}: no answer to ${request.type}`),
        judge: (m) => (m.type === request.type && 'id' in m && m.id === request.id ? { value: m as T } : undefined),
      });
    };

    const cpuMicros = async (): Promise<number> =>
      (await ask<Extract<ChildReply, { type: 'cpu' }>>((id) => ({ type: 'cpu', id }), 5_000)).micros;

    const reference = async (arg: string, timing: { warmupMs: number; durationMs: number }): Promise<Measurement> => {
      const reply = await ask<Extract<ChildReply, { type: 'reference' }>>(
        (id) => ({ type: 'reference', id, arg, warmupMs: timing.warmupMs, ms: timing.durationMs }),
        timing.warmupMs + timing.durationMs + 10_000,
      );
      if (!reply.measurement) throw new Error(`${name}: ${reply.error ?? 'no reference measurement'}`);
      return reply.measurement;
    };

    return { name, pid, port, cpuMicros, reference, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
