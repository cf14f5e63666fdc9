import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import WebSocket from 'ws';
import { EventTypes } from '../protocol/events.js';
import { EVENTS_SUBPROTOCOL, type ClientFrame, type EventFrame } from '../protocol/frames.js';
import { SESSION_COOKIE } from '../http/session.js';
import { CommandFailure } from './failure.js';

/**
 * A tab outside a browser (docs/events.md "WebSocket /ClientEventsWS"): it makes its own tab id, takes
 * the session cookie from the 101 answer, registers, pings every 10 s, and reconnects with
 * `lastEventId` after a lost connection, so a result signed meanwhile is written on the next Register.
 */

/** The protocol's client ping interval (docs/events.md: a socket silent for 30 s is closed). */
const PING_MS = 10_000;
const RECONNECT_MAX_MS = 10_000;
/** Close codes after which connecting again cannot help (docs/events.md "Close codes"). */
const FATAL_CLOSES = new Set([4400, 4403, 4409, 4429]);

export interface EventTabOptions {
  /** The service's base URL (`https://auth.example.org`, or with a path prefix). */
  service: URL;
  /** Sent as `Origin` on the handshake; null sends none. */
  origin: string | null;
  onEvent(frame: EventFrame): void;
  /** The channel failed for good (refused handshake, a fatal close code). */
  onFailure(error: Error): void;
  /** A human-readable note (connection lost, reconnecting). */
  onNotice(text: string): void;
}

/** The problem+json `detail` of a refused handshake, or its status line. */
function refusal(response: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    let body = '';
    response.setEncoding('utf8');
    response.on('data', (chunk: string) => (body = (body + chunk).slice(0, 4096)));
    response.on('end', () => {
      try {
        const problem = JSON.parse(body) as { detail?: string; code?: string };
        resolve(`${response.statusCode} ${problem.code ?? ''}: ${problem.detail ?? ''}`.trim());
      } catch {
        resolve(`HTTP ${response.statusCode}`);
      }
    });
    response.on('error', () => resolve(`HTTP ${response.statusCode}`));
  });
}

export class EventTab {
  readonly tabId = randomUUID();
  /** `tabwire_sid=…`, as the 101 answer set it; sent with every request of this tab's session. */
  cookie = '';
  private ws: WebSocket | undefined;
  private lastEventId: number | undefined;
  private stopped = false;
  private attempt = 0;
  private pinger: NodeJS.Timeout | undefined;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private registered: ((error?: Error) => void) | undefined;

  constructor(private readonly o: EventTabOptions) {}

  private get wsUrl(): string {
    const url = new URL(`${this.o.service.href.replace(/\/$/, '')}/ClientEventsWS`);
    url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
    return url.href;
  }

  /** Connects and registers; resolves once the service confirmed the Register (its `CheckServerInstance`). */
  open(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.registered = (error) => (error ? reject(error) : resolve());
      this.connect();
    });
  }

  private send(frame: ClientFrame): void {
    if (this.ws?.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(frame));
  }

  private connect(): void {
    const headers: Record<string, string> = {};
    if (this.cookie) headers.cookie = this.cookie;
    if (this.o.origin !== null) headers.origin = this.o.origin;
    const ws = new WebSocket(this.wsUrl, EVENTS_SUBPROTOCOL, { headers, handshakeTimeout: 15_000 });
    this.ws = ws;
    ws.on('upgrade', (response) => {
      // A first-time caller gets its session cookie on the 101 itself (docs/events.md).
      const set = ([] as string[]).concat(response.headers['set-cookie'] ?? []).find((c) => c.startsWith(`${SESSION_COOKIE}=`));
      if (set) this.cookie = set.split(';')[0]!;
    });
    let refused = false;
    let lastError = '';
    ws.on('unexpected-response', (_request, response) => {
      refused = true;
      // Read the problem+json first: terminating the handshake would cut the body off.
      void refusal(response).then((why) => {
        ws.terminate();
        this.fail(new CommandFailure(`the event channel was refused (${why})`));
      });
    });
    ws.on('open', () => {
      this.attempt = 0;
      this.send({ cmd: 'Register', tabId: this.tabId, location: `${this.o.service.href.replace(/\/$/, '')}/`, ...(this.lastEventId === undefined ? {} : { lastEventId: this.lastEventId }) });
      this.pinger = setInterval(() => this.send({ cmd: 'Ping' }), PING_MS);
    });
    ws.on('message', (data) => {
      let frame: EventFrame;
      try {
        frame = JSON.parse(data.toString()) as EventFrame;
      } catch {
        return; // not one of the service's frames; nothing to act on
      }
      if (typeof frame.id === 'number') this.lastEventId = frame.id;
      if (frame.type === EventTypes.CheckServerInstance) {
        this.registered?.();
        this.registered = undefined;
        return;
      }
      this.o.onEvent(frame);
    });
    // An error is always followed by `close`, where the next step is decided.
    ws.on('error', (error) => (lastError = error.message));
    ws.on('close', (code, reason) => {
      clearInterval(this.pinger);
      if (this.stopped || this.ws !== ws || refused) return;
      if (FATAL_CLOSES.has(code)) {
        this.fail(new CommandFailure(`the service closed the event channel (${code} ${reason.toString()})`));
        return;
      }
      if (this.registered) {
        // Never registered: the service is not reachable or not tabwire; retrying only hides that.
        this.fail(new CommandFailure(`could not open the event channel at ${this.wsUrl} (${lastError || `closed with ${code}`})`));
        return;
      }
      const delay = Math.min(RECONNECT_MAX_MS, 1000 * 2 ** this.attempt++);
      this.o.onNotice(`event channel lost (${code}); reconnecting in ${Math.round(delay / 1000)} s`);
      this.reconnectTimer = setTimeout(() => this.connect(), delay);
    });
  }

  private fail(error: Error): void {
    if (this.stopped) return;
    this.close();
    if (this.registered) this.registered(error);
    else this.o.onFailure(error);
    this.registered = undefined;
  }

  /** Lets the tab go at once (`Unregister`) and closes the socket. */
  close(): void {
    if (this.stopped) return;
    this.stopped = true;
    clearInterval(this.pinger);
    clearTimeout(this.reconnectTimer);
    this.send({ cmd: 'Unregister' });
    this.ws?.close(1000);
  }
}
