/**
 * Waiting on the servers the cluster benchmark runs in the foreground (PostgreSQL, Redis): whether a loopback
 * port accepts connections yet, and whether a child has exited within a grace period.
 */
import type { ChildProcess } from 'node:child_process';
import { connect } from 'node:net';

/** Resolves true once a TCP connection to 127.0.0.1:`port` opens, false if it is refused. */
export function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

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
