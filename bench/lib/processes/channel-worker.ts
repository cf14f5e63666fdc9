/**
 * Client-side child processes for the channel benchmarks (WebSocket tabs, long-polls): a child
 * running a bench/servers/channel-*-clients.ts file, driven over IPC with numbered calls. Server
 * children use bench/lib/processes/child.ts (startChild); this is the counterpart for load generators that
 * need their own process because one process may hold only ~20,000 open files.
 */
import { readFileSync } from 'node:fs';
import { spawnTracked, stopTracked } from './child-registry.js';
import { awaitReply } from './child-reply.js';

/** Parent -> worker. */
export interface WorkerCall {
  id: number;
  cmd: string;
  args: unknown;
}
/** Worker -> parent. */
export type WorkerReply =
  | { type: 'hello'; openFilesLimit: number }
  | { type: 'result'; id: number; ok: true; result: unknown }
  | { type: 'result'; id: number; ok: false; error: string };

export interface Worker {
  readonly name: string;
  readonly pid: number;
  /** Soft RLIMIT_NOFILE of the worker, as it reported it. */
  readonly openFilesLimit: number;
  call<T>(cmd: string, args?: unknown, timeoutMs?: number): Promise<T>;
  /** user + system CPU µs the worker has used so far. */
  cpuMicros(): Promise<number>;
  /** SIGTERM by pid, SIGKILL after a grace period. Idempotent. */
  stop(): Promise<void>;
}

/** Starts `entry` as a child with an IPC channel and waits for its hello. */
export async function startWorker(name: string, entry: URL, args: string[] = [], nodeArgs: string[] = []): Promise<Worker> {
  const child = spawnTracked(entry, args, nodeArgs);
  const pid = child.pid;
  const stop = (): Promise<void> => stopTracked(child);

  try {
    if (pid === undefined) throw new Error(`${name}: did not start`);
    const openFilesLimit = await awaitReply<WorkerReply, number>(child, {
      timeoutMs: 30_000,
      timeoutError: () => new Error(`${name}: no hello after 30 s`),
      exitError: (code) => new Error(`${name}: exited before hello (code ${code})`),
      judge: (m) => (m.type === 'hello' ? { value: m.openFilesLimit } : undefined),
    });

    let nextId = 0;
    const call = <T>(cmd: string, callArgs: unknown = {}, timeoutMs = 60_000): Promise<T> => {
      const id = nextId++;
      return awaitReply<WorkerReply, T>(child, {
        request: { id, cmd, args: callArgs } satisfies WorkerCall,
        timeoutMs,
        timeoutError: () => new Error(`${name}: no answer to ${cmd} within ${timeoutMs} ms`),
        exitError: (code, signal) => new Error(`${name}: exited during ${cmd} (code ${code}, signal ${signal})`),
        judge: (m) => {
          if (m.type !== 'result' || m.id !== id) return undefined;
          return m.ok ? { value: m.result as T } : { error: new Error(`${name} ${cmd}: ${m.error}`) };
        },
      });
    };

    return { name, pid, openFilesLimit, call, cpuMicros: () => call<number>('cpu', {}, 5_000), stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** Soft "Max open files" of a process, from /proc/<pid>/limits (own process by default). */
export function openFilesLimit(pid: number | 'self' = 'self'): number {
  const text = readFileSync(`/proc/${pid}/limits`, 'utf8');
  const line = text.split('\n').find((l) => l.startsWith('Max open files'));
  const soft = line?.slice('Max open files'.length).trim().split(/\s+/)[0];
  return soft === undefined || soft === 'unlimited' ? Number.POSITIVE_INFINITY : Number(soft);
}

/** Resident set size of a process in bytes (VmRSS in /proc/<pid>/status). */
export function rssBytes(pid: number): number {
  const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!match) throw new Error(`no VmRSS for pid ${pid}`);
  return Number(match[1]) * 1024;
}

/**
 * Worker side: announces itself, answers `cpu` and the commands in `handlers`, and exits when the
 * parent goes away or sends SIGTERM, so no load generator outlives a benchmark.
 */
export function serveWorker(handlers: Record<string, (args: never) => unknown>, onExit: () => void = () => undefined): void {
  if (!process.send) throw new Error('run this file through a benchmark (it needs an IPC channel)');
  const reply = (m: WorkerReply): void => {
    process.send?.(m);
  };
  const quit = (): void => {
    try {
      onExit();
    } finally {
      process.exit(0);
    }
  };
  process.once('SIGTERM', quit);
  process.once('SIGINT', quit);
  process.once('disconnect', quit);
  process.on('message', (m: WorkerCall) => {
    if (m.cmd === 'cpu') {
      const { user, system } = process.cpuUsage();
      reply({ type: 'result', id: m.id, ok: true, result: user + system });
      return;
    }
    const handler = handlers[m.cmd];
    if (!handler) {
      reply({ type: 'result', id: m.id, ok: false, error: `unknown command ${m.cmd}` });
      return;
    }
    Promise.resolve()
      .then(() => handler(m.args as never))
      .then(
        (result) => reply({ type: 'result', id: m.id, ok: true, result }),
        (err: unknown) => reply({ type: 'result', id: m.id, ok: false, error: err instanceof Error ? (err.stack ?? err.message) : String(err) }),
      );
  });
  reply({ type: 'hello', openFilesLimit: openFilesLimit() });
}
