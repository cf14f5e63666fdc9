/**
 * Sending chat messages from XMPP clients and waiting for them to be counted at the receiving end, for
 * the XMPP throughput benchmark (bench/xmpp-throughput.ts): a bounded window of messages in flight.
 */
import xml from '@xmpp/xml';
import type { TestXmppClient } from '../../../test/helpers/xmpp-client.js';
import { ROUND_TIMEOUT_MS, WINDOW } from './settings.js';

const chat = (to: string, n: number): xml.Element => xml('message', { to, type: 'chat', id: `b${n}` }, xml('body', {}, `benchmark message ${n}`));

/**
 * Sends `n` messages round-robin over the clients, at most WINDOW not yet counted, and resolves
 * when `counted()` has grown by `n`; the rate is n / (last counted - first sent).
 */
export async function pump(clients: TestXmppClient[], to: string, n: number, counted: () => number, waitCount: () => Promise<void>, offset: number): Promise<{ ms: number; lost: number }> {
  const base = counted();
  const t0 = performance.now();
  const deadline = t0 + ROUND_TIMEOUT_MS;
  let sent = 0;
  while (sent < n) {
    if (performance.now() > deadline) break;
    if (sent - (counted() - base) >= WINDOW) {
      await waitCount();
      continue;
    }
    const client = clients[sent % clients.length]!;
    void client.send(chat(to, offset + sent));
    sent++;
    if (sent % 50 === 0) await new Promise((r) => setImmediate(r)); // let socket writes and reads happen
  }
  while (counted() - base < n && performance.now() < deadline) await waitCount();
  const ms = performance.now() - t0;
  return { ms, lost: n - (counted() - base) };
}

/** A wake-up for `pump` when a count arrives (or after 20 ms). */
export class Counter {
  value = 0;
  private waiters: Array<() => void> = [];
  add(k: number): void {
    this.value += k;
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }
  wait = (): Promise<void> =>
    new Promise((resolve) => {
      const timer = setTimeout(resolve, 20);
      this.waiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
}
