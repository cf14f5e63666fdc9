/**
 * A page's keep-alive Pings as the event script sends them, for the load children that hold pages'
 * WebSockets (bench/servers/cluster-clients.ts, bench/servers/waiting/): the first at a random moment of
 * the interval, then every `pingMs`.
 */
import WebSocket from 'ws';

/** A page's socket and the timer of its Pings (a timeout until the first, an interval after it). */
export interface PingingTab {
  ws: WebSocket;
  ping: NodeJS.Timeout | undefined;
}

/** Starts a tab's Pings: the first at a random moment of the interval, then every `pingMs`. */
export function startPings(tab: PingingTab, pingMs: number): void {
  const ping = (): void => {
    if (tab.ws.readyState === WebSocket.OPEN) tab.ws.send('{"cmd":"Ping"}');
  };
  // The event script pings every 10 s from its own start: phases spread over the interval.
  tab.ping = setTimeout(() => {
    ping();
    tab.ping = setInterval(ping, pingMs);
  }, Math.random() * pingMs);
}

/** Stops a tab's Pings, whichever timer holds them now. */
export function stopPings(tab: PingingTab): void {
  clearTimeout(tab.ping);
  clearInterval(tab.ping);
}
