import { spawn, type ChildProcess } from 'node:child_process';

/** A server a test started: a foreground child, stopped by pid (never a daemon the test would orphan). */
export interface WatchedChild {
  child: ChildProcess;
  /** The last 4,000 characters it wrote to stdout and stderr, for error messages. */
  output(): string;
}

/**
 * Spawns `command` in the foreground and keeps the tail of what it writes. If the test process exits
 * without stopping it, the child is killed with it (best effort; `onOrphaned` adds what the server needs,
 * such as a signal to a postmaster that runs under another user).
 */
export function spawnWatched(command: string, args: readonly string[], onOrphaned?: () => void): WatchedChild {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const collect = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-4000);
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  child.on('error', (err) => collect(Buffer.from(`spawn failed: ${err.message}\n`)));
  const orphanGuard = () => {
    onOrphaned?.();
    child.kill('SIGKILL');
  };
  process.once('exit', orphanGuard);
  child.once('exit', () => process.removeListener('exit', orphanGuard));
  return { child, output: () => output };
}

/** Sends `signal` and resolves when the child has exited; SIGKILL after 5 s if it has not. */
export function terminate(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const force = setTimeout(() => child.kill('SIGKILL'), 5_000);
    child.once('exit', () => {
      clearTimeout(force);
      resolve();
    });
    child.kill(signal);
  });
}

/** A command run to its end: its exit code (null when a signal ended it) and everything it wrote. */
export interface Finished {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `command` with `env` as its whole environment; resolves once it has ended and its output is read. */
export function runToEnd(command: string, args: readonly string[], env: NodeJS.ProcessEnv): Promise<Finished> {
  const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}
