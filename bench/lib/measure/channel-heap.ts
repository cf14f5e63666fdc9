import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Full collections until the heap stops shrinking (at most 5), so a server's RSS is read on a
 * settled heap. Needs the process to run with --expose-gc.
 */
export async function settleHeap(): Promise<NodeJS.MemoryUsage> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('start this process with --expose-gc');
  let last = Number.POSITIVE_INFINITY;
  for (let round = 0; round < 5; round++) {
    gc();
    await sleep(50);
    const used = process.memoryUsage().heapUsed;
    if (last - used < 64 * 1024) break;
    last = used;
  }
  return process.memoryUsage();
}
