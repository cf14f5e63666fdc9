import { DEADLINE_MS } from './until.js';
import { randomUUID } from 'node:crypto';
import WebSocket from 'ws';
import type { EventFrame } from '../../src/protocol/frames.js';

/** The event the service sends after every Register (docs/events.md "Restarts"); kept apart from `events`. */
export const INSTANCE_EVENT = 'CheckServerInstance';

/** A tab as the reference event script is one: a WebSocket with subprotocol "ls" and a session cookie. */
export class TestTab {
  /** Every event but the instance greetings, in arrival order. */
  readonly events: EventFrame[] = [];
  /** The `CheckServerInstance` events the service sent after each Register. */
  readonly instances: EventFrame[] = [];
  private waiters: Array<() => void> = [];
  closeCode: number | undefined;
  closeReason = '';

  private constructor(
    readonly ws: WebSocket,
    readonly cookie: string,
    readonly tabId: string,
  ) {
    ws.on('message', (data) => {
      const frame = JSON.parse(data.toString()) as EventFrame;
      (frame.type === INSTANCE_EVENT ? this.instances : this.events).push(frame);
      this.wake();
    });
    ws.on('close', (code, reason) => {
      this.closeCode = code;
      this.closeReason = reason.toString();
      this.wake();
    });
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }

  /** Opens the socket (sending `cookie` if given) and registers `tabId`. */
  static async open(wsUrl: string, o: { cookie?: string; tabId?: string; origin?: string; register?: boolean } = {}): Promise<TestTab> {
    const headers: Record<string, string> = {};
    if (o.cookie) headers.cookie = o.cookie;
    if (o.origin) headers.origin = o.origin;
    const ws = new WebSocket(wsUrl, 'ls', { headers });
    let cookie = o.cookie ?? '';
    ws.on('upgrade', (response) => {
      const setCookie = response.headers['set-cookie']?.[0];
      if (setCookie) cookie = setCookie.split(';')[0]!;
    });
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    const tab = new TestTab(ws, cookie, o.tabId ?? randomUUID());
    if (o.register !== false) tab.send({ cmd: 'Register', tabId: tab.tabId, location: 'http://127.0.0.1/page' });
    return tab;
  }

  send(frame: unknown): void {
    this.ws.send(typeof frame === 'string' ? frame : JSON.stringify(frame));
  }

  /** Waits for an event of `type` (or the socket closing), at most `ms` (a bound for a broken run, not a timing claim). */
  async next(type: string, ms = DEADLINE_MS): Promise<EventFrame> {
    const deadline = Date.now() + ms;
    for (;;) {
      const found = (type === INSTANCE_EVENT ? this.instances : this.events).find((e) => e.type === type);
      if (found) return found;
      if (this.closeCode !== undefined) throw new Error(`socket closed (${this.closeCode} ${this.closeReason}) before ${type}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no ${type} within ${ms} ms`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  /** Waits until `n` events (greetings aside) have arrived, at most `ms` (a bound for a broken run). */
  async received(n: number, ms = DEADLINE_MS): Promise<EventFrame[]> {
    const deadline = Date.now() + ms;
    while (this.events.length < n) {
      if (this.closeCode !== undefined) throw new Error(`socket closed (${this.closeCode} ${this.closeReason}) after ${this.events.length} of ${n} events`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`${this.events.length} of ${n} events within ${ms} ms`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    return this.events;
  }

  /** Waits until the server closes the socket; returns the close code and reason. */
  async closed(ms = DEADLINE_MS): Promise<{ code: number; reason: string }> {
    const deadline = Date.now() + ms;
    while (this.closeCode === undefined) {
      if (Date.now() > deadline) throw new Error('socket not closed');
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 50);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    return { code: this.closeCode, reason: this.closeReason };
  }

  close(): void {
    this.ws.close(1000);
  }
}
