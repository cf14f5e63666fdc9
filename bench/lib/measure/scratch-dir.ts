import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Runs `body` with a fresh temporary folder (SQLite files, certificates, logs) and removes the
 * folder afterwards: after `body` settles, and also on an interrupt, which ends the process without
 * running `finally` (bench/lib/processes/child.ts), hence the `exit` listener.
 */
export async function inScratchDir<T>(body: (dir: string) => Promise<T>, prefix = 'tabwire-bench-'): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const removeDir = (): void => rmSync(dir, { recursive: true, force: true });
  process.once('exit', removeDir);
  try {
    return await body(dir);
  } finally {
    process.off('exit', removeDir);
    removeDir();
  }
}
