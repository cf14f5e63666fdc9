/**
 * The transport contract (after socket.io's engine.io): a transport is one connection
 * (a WebSocket) or one request (a long poll). It reports frames and exactly one end; the client
 * above it owns the tab ID, de-duplication, backoff and the choice of transport, so switching
 * transport loses nothing.
 */

/** Names as in `Events.stats.transport`. */
export const TRANSPORT_KINDS = ['websocket', 'longpoll'] as const;
export type TransportKind = (typeof TRANSPORT_KINDS)[number];

/** How a connection or poll ended, and so what the client does next. */
export type TransportEnd =
  /** A long poll answered 200: poll again at once. */
  | { kind: 'polled' }
  /** Network trouble, a server error or an ordinary close: retry after a backoff. `opened`: it had connected. */
  | { kind: 'lost'; opened: boolean }
  /**
   * The service cannot reach its store or shared state now (503 store_unavailable / shared_state_unavailable,
   * close 1013): retry with backoff, but not before `retryAfterMs`; same tab ID, same last event id.
   */
  | { kind: 'unavailable'; retryAfterMs: number }
  /** The tab belongs to another session (close 4403, 403 tab_session_mismatch): new tab ID, retry. */
  | { kind: 'tab-rejected' }
  /** The service forgot the tab (404 tab_not_registered): forget the last event id, retry. */
  | { kind: 'tab-forgotten' }
  /** A newer connection of the same tab took over (close 4409): stop. */
  | { kind: 'replaced' };

/** What a transport reads from and reports to the client. Reads happen when a frame is built. */
export interface TransportLink {
  readonly url: string;
  tabId(): string;
  lastEventId(): number | undefined;
  location(): string;
  /** Connected: a WebSocket opened and Register was sent, or a poll was sent. */
  ready(): void;
  /** One WebSocket message, undecoded. */
  frame(data: unknown): void;
  /** One long-poll body; false when it is not a JSON array of frames. */
  batch(text: string): boolean;
  /** Called once, unless the client stopped the transport first. */
  end(end: TransportEnd): void;
}

/** A running transport. */
export interface Transport {
  readonly kind: TransportKind;
  /**
   * Stops without reporting an end. With `goodbye`, a WebSocket first sends Unregister (the
   * page is leaving); returns true when the service was told, so it forgets the tab.
   */
  stop(goodbye: boolean): boolean;
}
