/**
 * The CPU a private Prosody (test/helpers/prosody.ts) has used, for the XMPP throughput benchmark's
 * CPU windows: Prosody is not a child the benchmark started, so its time is read from /proc.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { ProsodyServer } from '../../test/helpers/prosody.js';

/** Linux's USER_HZ: /proc/<pid>/stat counts CPU in 1/100 s. */
const TICK_MICROS = 10_000;

/** Prosody's CPU (µs) from /proc/<pid>/stat; its pid from the pidfile next to its log. */
export function prosodyCpuProbe(prosody: ProsodyServer): () => Promise<number> {
  let pid: number | undefined;
  try {
    pid = Number(readFileSync(join(dirname(prosody.logFile), 'prosody.pid'), 'utf8').trim());
  } catch {
    pid = undefined;
  }
  return async () => {
    if (!pid) return 0;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      // fields[0] is the state (field 3); utime and stime are fields 14 and 15.
      return (Number(fields[11]) + Number(fields[12])) * TICK_MICROS;
    } catch {
      return 0;
    }
  };
}
