/**
 * The end of a load child's `warmup` command (bench/servers/channel-ws-clients.ts,
 * bench/servers/cluster-clients.ts): the warm-up tabs leave as pages do, so the server's first-use costs
 * are paid and none of them is still held when the measured tabs open.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type WebSocket from 'ws';

/**
 * Every socket sends Unregister; after `settleMs` (the server handles them) each closes with 1000.
 * Resolves once all are closed.
 */
export async function retireWarmupTabs(sockets: WebSocket[], settleMs: number): Promise<void> {
  for (const ws of sockets) ws.send('{"cmd":"Unregister"}');
  await sleep(settleMs);
  await Promise.all(
    sockets.map(
      (ws) =>
        new Promise<void>((resolve) => {
          ws.once('close', () => resolve());
          ws.close(1000, 'warmup done');
        }),
    ),
  );
}
