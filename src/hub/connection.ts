import type { EventFrame } from '../protocol/frames.js';
import type { Disconnect } from './disconnect.js';

/**
 * What the hub needs of a transport (WebSocket, long-poll): write frames, close. Transports know
 * nothing of QuickLogin or XMPP; everything they carry comes from the hub.
 */
export interface TabConnection {
  /** Which transport: a long-poll tab is between requests most of the time and still counts as live. */
  readonly transport: 'websocket' | 'long-poll';
  /** False once the connection can never write again (socket closed, poll answered or abandoned). */
  readonly open: boolean;
  /**
   * What identifies the client across connections, when the transport has it: a long-poll's kept-alive
   * socket. The hub remembers the last event written to each, so two pages polling one tab (a
   * duplicated browser tab) each get every event, even one that arrived while only the other was polling.
   */
  readonly client?: object;
  /** Writes frames in order. Returns false when the connection can take no more (a long-poll already answered). */
  send(frames: readonly EventFrame[]): boolean;
  /**
   * Asks the client to confirm that everything written so far reached it, when the transport can (a
   * WebSocket: a ping after the writes, one per burst; RFC 6455 §5.5.2-5.5.3 has the client answer with a
   * pong). `done(true)` once it did, `done(false)` once the connection ended first; never both. Without
   * it (long-poll) the tab's next poll confirms (docs/xmpp.md "Delivered means confirmed").
   */
  confirm?(done: (reached: boolean) => void): void;
  /** Ends the connection the way `disconnect` says for this transport (disconnect.ts); nothing is written after it. */
  close(disconnect: Disconnect): void;
}
