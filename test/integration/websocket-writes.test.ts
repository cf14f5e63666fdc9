import type { Duplex } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashSession } from '../../src/http/session.js';
import { startService, type TestService } from '../helpers/service.js';
import { INSTANCE_EVENT, TestTab } from '../helpers/tab.js';

/**
 * Events that reach one tab in one burst leave the server in one socket write (src/channel/websocket.ts):
 * an XMPP stream hands the component several stanzas per read, and a write (a system call) per event
 * was a fifth of the service's CPU in the XMPP benchmark. Each event is still its own WebSocket message.
 */
let service: TestService;
/** Writes handed to the kernel per upgraded socket, counted at the socket's own write methods. */
const writes = new Map<Duplex, number>();

beforeAll(async () => {
  service = await startService();
  // After the service's own upgrade listener: the same socket, once the handshake was answered.
  service.app.server.on('upgrade', (_request, socket: Duplex) => {
    writes.set(socket, 0);
    const counted = socket as unknown as Record<'_write' | '_writev', (...args: unknown[]) => unknown>;
    for (const method of ['_write', '_writev'] as const) {
      const original = counted[method];
      counted[method] = function (this: unknown, ...args: unknown[]) {
        writes.set(socket, (writes.get(socket) ?? 0) + 1);
        return original.apply(this, args);
      };
    }
  });
});
afterAll(async () => service.close());

async function registeredTab(): Promise<{ tab: TestTab; socket: Duplex }> {
  const before = new Set(writes.keys());
  const tab = await TestTab.open(service.wsUrl);
  await tab.next(INSTANCE_EVENT);
  const socket = [...writes.keys()].find((s) => !before.has(s))!;
  expect(socket).toBeDefined();
  writes.set(socket, 0);
  return { tab, socket };
}

describe('WebSocket writes', () => {
  it('a burst of 200 events to one tab arrives whole and in order, as 200 messages, in a handful of socket writes', async () => {
    const { tab, socket } = await registeredTab();
    const address = { tabId: tab.tabId, session: hashSession(tab.cookie.split('=')[1]!) };
    const sent = Array.from({ length: 200 }, (_, i) => service.app.tabwire.hub.deliver(address, { type: 'Burst', data: i }));
    await Promise.all(sent);
    expect((await tab.received(200)).map((e) => e.data)).toEqual(Array.from({ length: 200 }, (_, i) => i));
    // One write per event before (200); now the burst leaves in one, or a few if it spans turns.
    expect(writes.get(socket)).toBeLessThanOrEqual(5);
    tab.close();
  });

  it('a lone event is written at once, not held for company', async () => {
    const { tab, socket } = await registeredTab();
    const address = { tabId: tab.tabId, session: hashSession(tab.cookie.split('=')[1]!) };
    await service.app.tabwire.hub.deliver(address, { type: 'Alone', data: 1 });
    expect((await tab.next('Alone')).data).toBe(1);
    expect(writes.get(socket)).toBe(1);
    tab.close();
  });
});
