/**
 * Client-side child processes for the channel benchmarks (WebSocket tabs, long-polls): a child
 * running a bench/servers/channel-*-clients.ts file, driven over IPC with numbered calls. Server
 * children use bench/lib/child.ts (startChild); this is the counterpart for load generators that
 * need their own process because one process may hold only ~20,000 open files.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';

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

const tsxLoader = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
const live = new Set<ChildProcess>();

function killAllSync(): void {
  for (const child of live) {
    if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) {
      try {
        process.kill(child.pid, 'SIGKILL');
      } catch {
        // gone already
      }
    }
  }
  live.clear();
}
process.once('exit', killAllSync);
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    killAllSync();
    process.exit(signal === 'SIGINT' ? 130 : 143);
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
    const onExit = (): void => {
      clearTimeout(timer);
      resolve(true);
    };
    child.once('exit', onExit);
  });
}

/** Starts `entry` as a child with an IPC channel and waits for its hello. */
export async function startWorker(name: string, entry: URL, args: string[] = [], nodeArgs: string[] = []): Promise<Worker> {
  const child = spawn(process.execPath, [...nodeArgs, '--import', tsxLoader, fileURLToPath(entry), ...args], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  live.add(child);
  child.once('exit', () => live.delete(child));
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
    if (pid === undefined) throw new Error(`${name}: did not start`);
    const openFilesLimit = await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${name}: no hello after 30 s`)), 30_000);
      const onMessage = (m: WorkerReply): void => {
        if (m.type !== 'hello') return;
        cleanup();
        resolve(m.openFilesLimit);
      };
      const onExit = (code: number | null): void => {
        cleanup();
        reject(new Error(`${name}: exited before hello (code ${code})`));
      };
      const cleanup = (): void => {
        clearTimeout(timer);
        child.off('message', onMessage);
        child.off('exit', onExit);
      };
      child.on('message', onMessage);
      child.once('exit', onExit);
    });

    let nextId = 0;
    const call = <T>(cmd: string, callArgs: unknown = {}, timeoutMs = 60_000): Promise<T> =>
      new Promise<T>((resolve, reject) => {
        const id = nextId++;
        const timer = setTimeout(() => {
          cleanup();
          reject(new Error(`${name}: no answer to ${cmd} within ${timeoutMs} ms`));
        }, timeoutMs);
        const onMessage = (m: WorkerReply): void => {
          if (m.type !== 'result' || m.id !== id) return;
          cleanup();
          if (m.ok) resolve(m.result as T);
          else reject(new Error(`${name} ${cmd}: ${m.error}`));
        };
        const onExit = (code: number | null, signal: NodeJS.Signals | null): void => {
          cleanup();
          reject(new Error(`${name}: exited during ${cmd} (code ${code}, signal ${signal})`));
        };
        const cleanup = (): void => {
          clearTimeout(timer);
          child.off('message', onMessage);
          child.off('exit', onExit);
        };
        child.on('message', onMessage);
        child.once('exit', onExit);
        child.send({ id, cmd, args: callArgs } satisfies WorkerCall);
      });

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
