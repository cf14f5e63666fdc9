/**
 * The CPU a private Prosody (test/helpers/prosody.ts) has used, for the XMPP throughput benchmark's
 * CPU windows: Prosody is not a child the benchmark started, so its time is read from /proc.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { ProsodyServer } from '../../../test/helpers/prosody.js';
import { procCpuMicros } from './proc-cpu.js';

/** Prosody's CPU (µs) from /proc/<pid>/stat; its pid from the pidfile next to its log. */
export function prosodyCpuProbe(prosody: ProsodyServer): () => Promise<number> {
  let pid: number | undefined;
  try {
    pid = Number(readFileSync(join(dirname(prosody.logFile), 'prosody.pid'), 'utf8').trim());
  } catch {
    pid = undefined;
  }
  return async () => (pid ? procCpuMicros(pid) : 0);
}
