/**
 * A page's event WebSocket as the event script opens it, for the load generators that hold many pages
 * (bench/servers/waiting/tabs.ts, bench/servers/cluster-clients.ts) and the tabs of the XMPP throughput
 * rounds (bench/lib/xmpp-throughput/rounds.ts): the handshake on /ClientEventsWS with
 * subprotocol `ls` and the page's Origin, the session cookie taken from the 101 (one session per page),
 * `Register`, and the server's `CheckServerInstance` back.
 */
import WebSocket from 'ws';

/** How long a handshake, or a Register's answer, may take before the page counts as failed to open. */
const OPEN_TIMEOUT_MS = 30_000;

/**
 * Resolves once the server answered the Register, with the socket (errors from then on are the caller's to
 * watch for through `close`) and the `tabwire_sid=…` cookie; rejects (the socket terminated) otherwise.
 */
export function openRegistered(o: {
  port: number;
  origin: string;
  tabId: string;
  headers?: Record<string, string>;
  /** The loopback address the socket is opened from (127.0.0.1 by default): one address has ~28,000 ports to one server here. */
  localAddress?: string;
}): Promise<{ ws: WebSocket; cookie: string }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws://127.0.0.1:${o.port}/ClientEventsWS`, 'ls', {
      perMessageDeflate: false,
      handshakeTimeout: OPEN_TIMEOUT_MS,
      headers: { Origin: o.origin, ...o.headers },
      ...(o.localAddress === undefined ? {} : { localAddress: o.localAddress }),
    });
    let cookie: string | undefined;
    let settled = false;
    const timer = setTimeout(() => fail(new Error(`no CheckServerInstance within ${OPEN_TIMEOUT_MS / 1000} s of Register`)), OPEN_TIMEOUT_MS);
    const fail = (err: Error): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      ws.terminate();
      reject(err);
    };
    ws.once('upgrade', (response) => {
      cookie = (response.headers['set-cookie'] ?? []).map((c) => c.split(';')[0]!).find((c) => c.startsWith('tabwire_sid='));
    });
    ws.once('error', fail);
    ws.once('open', () => {
      if (cookie === undefined) return fail(new Error('the 101 response set no tabwire_sid cookie'));
      ws.send(JSON.stringify({ cmd: 'Register', tabId: o.tabId, location: `${o.origin}/` }));
    });
    const first = (data: WebSocket.RawData): void => {
      if (settled) return;
      if ((JSON.parse(data.toString()) as { type?: string }).type !== 'CheckServerInstance') return;
      settled = true;
      clearTimeout(timer);
      ws.off('message', first);
      ws.off('error', fail);
      ws.on('error', () => undefined);
      resolve({ ws, cookie: cookie! });
    };
    ws.on('message', first);
  });
}
