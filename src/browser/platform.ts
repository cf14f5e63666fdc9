/**
 * What the event client needs from its platform, as small structural types. The browser
 * supplies the real ones (browser-env.ts); tests supply fakes. Nothing here names a DOM type,
 * so the core modules also typecheck under the Node-typed test config.
 */

/** WebSocket readyState values (WHATWG WebSockets §3). */
export const SOCKET_OPEN = 1;

/** The part of a WebSocket the transport uses. Handlers are assigned, never read. */
export interface SocketLike {
  readonly readyState: number;
  onopen: Handler<unknown> | null;
  onmessage: Handler<{ data: unknown }> | null;
  onclose: Handler<{ code: number; reason: string }> | null;
  onerror: Handler<unknown> | null;
  send(data: string): void;
  close(code?: number, reason?: string): void;
}

/**
 * A handler whose parameter is checked bivariantly (method syntax), so the DOM's
 * `(this: WebSocket, ev: MessageEvent) => any` is assignable where `{ data: unknown }` is expected.
 */
type Handler<E> = { bivarianceHack(event: E): void }['bivarianceHack'];

/** `new WebSocket(url, protocol)`; the DOM constructor fits. */
export type SocketFactory = new (url: string, protocols: string) => SocketLike;

/** The request the long-poll transport makes; a subset of RequestInit. */
export interface PollRequest {
  method: 'POST';
  credentials: 'include';
  headers: Record<string, string>;
  body: string;
  signal?: AbortSignal;
}

/** The part of a fetch Response the long-poll transport reads. */
export interface ResponseLike {
  readonly status: number;
  text(): Promise<string>;
}

/** `fetch(url, init)`; the DOM's fetch fits. */
export type FetchLike = (url: string, init: PollRequest) => Promise<ResponseLike>;

/** Timers; handles are opaque so both DOM numbers and Node Timeout objects fit. */
export interface Timers {
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** Where errors from page handlers and transport trouble are reported (console in a browser). */
export interface Logger {
  warn(...args: unknown[]): void;
  error(...args: unknown[]): void;
}
