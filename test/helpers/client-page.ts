import { randomUUID } from 'node:crypto';
import WebSocket from 'ws';
import { EventClient } from '../../src/browser/client.js';
import type { FetchLike, SocketLike } from '../../src/browser/platform.js';

/**
 * A page running the project's own event client (src/browser/client.ts) in this process, without a browser:
 * the real reconnect logic (same tab id and session cookie on every reconnect, `lastEventId` in Register and
 * `X-Last-Event-ID`, backoff with jitter, a new tab id after 4403) over `ws` sockets and `fetch`, with a
 * cookie jar of one cookie as a browser keeps for the service's host. Light enough for hundreds per test.
 */
export class ClientPage {
  readonly client: EventClient;
  /** The tab id the page started with (a 4403 makes the client take another). */
  readonly firstTabId: string;
  /** `name=value` of the session cookie the service set (the first handshake or poll sets it). */
  cookie = '';
  /** `Purpose` of every `SignatureReceived` the page's handler was called with, in order. */
  readonly results: string[] = [];
  /** Close codes of the page's WebSockets, in order. */
  readonly closeCodes: number[] = [];
  /** Long-poll answers other than 200 (status and body). */
  readonly pollFailures: string[] = [];
  /** WebSockets of this page open now (0 or 1 but for a moment). */
  openSockets = 0;

  constructor(
    /** `host:port` the page's event script connects to (a balancer). */
    host: string,
    transport: 'websocket' | 'long-poll',
  ) {
    let windowName: string = randomUUID();
    this.firstTabId = windowName;
    this.client = new EventClient({
      tabIdStore: { read: () => windowName, write: (id) => void (windowName = id) },
      newTabId: () => randomUUID(),
      defaultHost: () => ({ host, secure: false }),
      location: () => 'http://127.0.0.1/page',
      ...(transport === 'websocket' ? { WebSocket: this.socketFactory() } : { fetch: this.fetchWithCookie() }),
      timers: { setTimeout: (callback, ms) => setTimeout(callback, ms), clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout) },
      log: { warn: () => undefined, error: () => undefined },
    });
    this.client.on('SignatureReceived', (data) => this.results.push((data as { Purpose: string }).Purpose));
  }

  get tabId(): string {
    return this.client.tabId;
  }

  /** What `settleCode` needs to ask for a code as this page. */
  get session(): { tabId: string; cookie: string } {
    return { tabId: this.client.tabId, cookie: this.cookie };
  }

  private keep(setCookie: string | null | undefined): void {
    if (setCookie) this.cookie = setCookie.split(';')[0]!;
  }

  /** `new WebSocket(url, protocol)` as a browser makes it for this page: its cookie sent, a new one kept. */
  private socketFactory(): new (url: string, protocol: string) => SocketLike {
    const page = this;
    return class PageSocket implements SocketLike {
      onopen: SocketLike['onopen'] = null;
      onmessage: SocketLike['onmessage'] = null;
      onclose: SocketLike['onclose'] = null;
      onerror: SocketLike['onerror'] = null;
      private readonly ws: WebSocket;

      constructor(url: string, protocol: string) {
        this.ws = new WebSocket(url, protocol, { headers: page.cookie ? { cookie: page.cookie } : {} });
        let opened = false;
        this.ws.on('upgrade', (response) => page.keep(response.headers['set-cookie']?.[0]));
        this.ws.on('open', () => {
          opened = true;
          page.openSockets++;
          this.onopen?.({});
        });
        this.ws.on('message', (data) => this.onmessage?.({ data: data.toString() }));
        this.ws.on('error', () => this.onerror?.({}));
        this.ws.on('close', (code, reason) => {
          if (opened) page.openSockets--;
          page.closeCodes.push(code);
          this.onclose?.({ code, reason: reason.toString() });
        });
      }

      get readyState(): number {
        return this.ws.readyState;
      }

      send(data: string): void {
        this.ws.send(data);
      }

      close(code?: number, reason?: string): void {
        this.ws.close(code, reason);
      }
    };
  }

  /** `fetch` with `credentials: 'include'` as a browser does it for this page. */
  private fetchWithCookie(): FetchLike {
    return async (url, init) => {
      const headers = { ...init.headers, ...(this.cookie ? { cookie: this.cookie } : {}) };
      const response = await fetch(url, { method: init.method, headers, body: init.body, ...(init.signal ? { signal: init.signal } : {}) });
      this.keep(response.headers.get('set-cookie'));
      const text = await response.text();
      if (response.status !== 200) this.pollFailures.push(`${response.status} ${text}`);
      return { status: response.status, text: async () => text };
    };
  }
}
