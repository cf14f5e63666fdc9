/**
 * Raising a child's open-file limit after it started: a process here may open ~20,000 files (`ulimit -Hn`
 * 20000), fewer than one node holding 30,000 waiting pages needs (a socket each). `prlimit --pid` raises
 * both limits of a running process when this one may (root with CAP_SYS_RESOURCE, up to fs.nr_open);
 * otherwise the limit stays, the caller sizes its load to it and reports why.
 */
import { spawnSync } from 'node:child_process';
import { openFilesLimit } from './channel-worker.js';

/** `pid`'s soft open-file limit after trying to raise it to `wanted`, and why it could not be raised. */
export function raiseOpenFiles(pid: number, wanted: number): { limit: number; refused?: string } {
  const now = openFilesLimit(pid);
  if (now >= wanted) return { limit: now };
  const run = spawnSync('prlimit', ['--pid', String(pid), `--nofile=${wanted}:${wanted}`], { encoding: 'utf8' });
  const limit = openFilesLimit(pid);
  if (limit >= wanted) return { limit };
  const why = run.error ? run.error.message : (run.stderr.trim() || `prlimit exited ${run.status}`);
  return { limit, refused: `prlimit --nofile=${wanted} refused (${why}; raising a hard limit needs CAP_SYS_RESOURCE)` };
}
