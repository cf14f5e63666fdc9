import { spawn, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { ChildReply, ParentRequest } from '../servers/protocol.js';
import type { Measurement } from './types.js';

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

// tsx's loader, so a child runs TypeScript the way `tsx bench/run.ts` runs this process, without
// going through the tsx CLI (which would put another process between us and the server).
const tsxLoader = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;

const live = new Set<ChildProcess>();

function killAllSync(): void {
  for (const child of live) {
    if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) {
      try {
        process.kill(child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }
  live.clear();
}

// Children must never outlive the benchmark, whether it ends normally, throws or is interrupted.
process.once('exit', killAllSync);
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    killAllSync();
    process.exit(signal === 'SIGINT' ? 130 : 143);
  });
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

const exited = (child: ChildProcess): boolean => child.exitCode !== null || child.signalCode !== null;

function waitExit(child: ChildProcess, ms: number): Promise<boolean> {
  if (exited(child)) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      child.off('exit', onExit);
      resolve(false);
    }, ms);
    const onExit = () => {
      clearTimeout(timer);
      resolve(true);
    };
    child.once('exit', onExit);
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
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), '--import', tsxLoader, fileURLToPath(entry), ...args], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  live.add(child);
  child.once('exit', () => live.delete(child));
  // A failed spawn leaves no pid and is reported below; without a listener it would crash the run.
  child.on('error', () => {});
  const pid = child.pid;

  const stop = async (): Promise<void> => {
    if (pid === undefined || exited(child)) return;
    try {
      process.kill(pid, 'SIGTERM');
    } catch {
      return;
    }
    if (!(await waitExit(child, 5_000))) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // exited meanwhile
      }
      await waitExit(child, 5_000);
    }
    live.delete(child);
  };

  try {
    if (pid === undefined) throw new Error(`${name}: child process did not start`);
    const port = await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${name}: not ready after ${readyTimeoutMs} ms`)), readyTimeoutMs);
      const onMessage = (m: ChildReply) => {
        if (m.type === 'ready') {
          cleanup();
          resolve(m.port);
        } else if (m.type === 'failed') {
          cleanup();
          reject(new Error(`${name}: ${m.message}`));
        }
      };
      const onExit = (code: number | null, signal: NodeJS.Signals | null) => {
        cleanup();
        reject(new Error(`${name}: exited before it was ready (code ${code}, signal ${signal})`));
      };
      const cleanup = () => {
        clearTimeout(timer);
        child.off('message', onMessage);
        child.off('exit', onExit);
      };
      child.on('message', onMessage);
      child.once('exit', onExit);
    });

    let nextId = 0;
    /** Sends `request` (with a fresh id) and resolves with the reply of the same type and id. */
    const ask = <T extends ChildReply>(make: (id: number) => ParentRequest, timeoutMs: number): Promise<T> =>
      new Promise((resolve, reject) => {
        const request = make(nextId++);
        const timer = setTimeout(() => {
          child.off('message', onMessage);
          reject(new Error(`${name}: no answer to ${request.type}`));
        }, timeoutMs);
        const onMessage = (m: ChildReply) => {
          if (m.type === request.type && 'id' in m && m.id === request.id) {
            clearTimeout(timer);
            child.off('message', onMessage);
            resolve(m as T);
          }
        };
        child.on('message', onMessage);
        child.send(request);
      });

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
