import type { EventFrame } from '../protocol/frames.js';

/**
 * What the hub needs of a transport (WebSocket, long-poll): write frames, close. Transports know
 * nothing of QuickLogin or XMPP; everything they carry comes from the hub.
 */
export interface TabConnection {
  /** Writes frames in order. Returns false when the connection can take no more (a long-poll already answered). */
  send(frames: readonly EventFrame[]): boolean;
  close(code: number, reason: string): void;
}
