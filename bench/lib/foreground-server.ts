/**
 * Waiting on the servers the cluster benchmark runs in the foreground (PostgreSQL, Redis): whether a child has
 * exited within a grace period, and what it wrote last. (Whether a port accepts connections: test/helpers/ports.ts.)
 */
import type { ChildProcess } from 'node:child_process';

/** Resolves true once `child` has exited (at once if it already has), false after `ms` without exiting. */
export function waitExit(child: ChildProcess, ms: number): Promise<boolean> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

/** The last 4,000 characters `child` wrote (stdout, stderr, or why it could not be spawned), for the error that says it failed. */
export function outputTail(child: ChildProcess): () => string {
  let output = '';
  const collect = (chunk: Buffer): void => {
    output = (output + chunk.toString()).slice(-4000);
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  child.on('error', (err) => collect(Buffer.from(`spawn failed: ${err.message}\n`)));
  return () => output;
}
