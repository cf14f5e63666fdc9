/**
 * A waiting page's tab, as the event script runs it: a WebSocket to /ClientEventsWS (subprotocol `ls`,
 * the page's Origin, the session cookie from the 101), Register, a Ping every `pingMs` (../tab-pings.ts),
 * and on leaving Unregister and close 1000.
 */
import WebSocket from 'ws';
import { tabIdOf } from '../../lib/load/channel-ids.js';
import { openRegistered } from '../../lib/load/registered-socket.js';
import { stopPings } from '../tab-pings.js';
import { qrRequest, USER_AGENT } from './requests.js';
import { state, type Setup, type Tab } from './state.js';

export type { Tab } from './state.js';

/** Opens one tab: handshake (cookie from the 101), Register, and the server's CheckServerInstance back. */
export async function openTab(s: Setup, n: number): Promise<Tab> {
  const id = tabIdOf(s.prefix, n);
  const { ws, cookie } = await openRegistered({ port: s.port, origin: state.origin, tabId: id, headers: { 'User-Agent': USER_AGENT }, ...(s.localAddress === undefined ? {} : { localAddress: s.localAddress }) });
  const tab: Tab = { id, slot: -1, ws, cookie, post: qrRequest(s, id, cookie), running: false, leaving: false, since: 0, refresh: undefined, ping: undefined, leave: undefined };
  ws.on('close', () => {
    if (!tab.leaving && !state.stopping) {
      state.unexpectedCloses++;
      tab.running = false;
    }
  });
  return tab;
}

/** Stops a tab's timers (refresh, ping, leave) and marks it leaving, so its close is not counted as the server's. */
export function stopTab(tab: Tab): void {
  tab.running = false;
  tab.leaving = true;
  clearTimeout(tab.refresh);
  stopPings(tab);
  clearTimeout(tab.leave);
}

/** What the event script does on beforeunload: Unregister, then close. Resolves once closed (or cut after 10 s). */
export function closeLeftTab(tab: Tab): Promise<void> {
  return new Promise<void>((resolve) => {
    if (tab.ws.readyState !== WebSocket.OPEN) return resolve();
    const timer = setTimeout(() => {
      tab.ws.terminate();
      resolve();
    }, 10_000);
    tab.ws.once('close', () => {
      clearTimeout(timer);
      resolve();
    });
    tab.ws.send('{"cmd":"Unregister"}');
    tab.ws.close(1000);
  });
}
