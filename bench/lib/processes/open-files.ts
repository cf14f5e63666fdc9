/**
 * Raising a child's open-file limit after it started: a process here may open ~20,000 files (`ulimit -Hn`
 * 20000), fewer than one node holding 30,000 waiting pages needs (a socket each). As root, `prlimit --pid`
 * raises both limits of a running process (the kernel allows up to fs.nr_open); otherwise the limit stays
 * and the caller sizes its load to it.
 */
import { execFileSync } from 'node:child_process';
import { openFilesLimit } from './channel-worker.js';

/** Raises `pid`'s soft and hard RLIMIT_NOFILE to `wanted` when it is lower and this process may (root); answers the soft limit now. */
export function raiseOpenFiles(pid: number, wanted: number): number {
  const now = openFilesLimit(pid);
  if (now >= wanted || process.getuid?.() !== 0) return now;
  try {
    execFileSync('prlimit', ['--pid', String(pid), `--nofile=${wanted}:${wanted}`], { stdio: ['ignore', 'ignore', 'pipe'] });
  } catch {
    // no prlimit, or the kernel refused (fs.nr_open): the limit stays as it was
  }
  return openFilesLimit(pid);
}
