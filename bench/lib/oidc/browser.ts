/**
 * What a browser brings to a login, for bench/oidc-login.ts: a cookie jar for the service's host and a page's
 * event WebSocket (subprotocol `ls`, the page's Origin, Register, CheckServerInstance back) that can wait for
 * one event. The cookie jar is the suite's (test/helpers/oidc-flow.ts), as bench/fuzz.ts uses the suite's fuzz cases.
 */
import { randomUUID } from 'node:crypto';
import WebSocket from 'ws';
export { CookieJar } from '../../../test/helpers/oidc-flow.js';

/** Longest wait for one frame: bounds a broken run only. */
const FRAME_TIMEOUT_MS = 30_000;

/** A registered page tab: its id, the session cookie it holds, and its events as they arrive. */
export class PageTab {
  private readonly seen: string[] = [];
  private waiter: (() => void) | undefined;
  private closed = false;

  private constructor(
    readonly ws: WebSocket,
    readonly tabId: string,
    readonly cookie: string,
  ) {
    ws.on('message', (data) => {
      this.seen.push((JSON.parse(data.toString()) as { type: string }).type);
      this.waiter?.();
    });
    ws.on('close', () => {
      this.closed = true;
      this.waiter?.();
    });
    ws.on('error', () => undefined);
  }

  /**
   * Opens /ClientEventsWS as the event script does, with `cookie` (`tabwire_sid=…`, the login page's session)
   * or, without one, the session the 101 hands out; resolves once the Register was answered.
   */
  static async open(port: number, origin: string, cookie?: string): Promise<PageTab> {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/ClientEventsWS`, 'ls', { perMessageDeflate: false, headers: { origin, ...(cookie ? { cookie } : {}) } });
    let session = cookie;
    ws.once('upgrade', (response) => {
      session = (response.headers['set-cookie'] ?? []).map((c) => c.split(';', 1)[0]!).find((c) => c.startsWith('tabwire_sid=')) ?? session;
    });
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    if (!session) throw new Error('the tab has no tabwire_sid session');
    const tab = new PageTab(ws, randomUUID(), session);
    ws.send(JSON.stringify({ cmd: 'Register', tabId: tab.tabId, location: `${origin}/` }));
    await tab.next('CheckServerInstance');
    return tab;
  }

  /** Waits for an event of `type` (already arrived or to come). */
  async next(type: string): Promise<void> {
    const deadline = Date.now() + FRAME_TIMEOUT_MS;
    while (!this.seen.includes(type)) {
      if (this.closed) throw new Error(`the tab closed before ${type}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no ${type} within ${FRAME_TIMEOUT_MS} ms`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiter = () => {
          clearTimeout(timer);
          this.waiter = undefined;
          resolve();
        };
      });
    }
  }

  /** Closes the socket (the page navigated away) and waits until it is closed. */
  async close(): Promise<void> {
    if (this.closed) return;
    const done = new Promise<void>((resolve) => this.ws.once('close', () => resolve()));
    this.ws.close();
    await done;
  }
}
