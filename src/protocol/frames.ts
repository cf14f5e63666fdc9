/**
 * Wire shapes of the client event channel (docs/events.md, docs/events.md).
 * Shared by the hub, the transports and the browser script; imports nothing.
 */

/** WebSocket subprotocol required at the handshake. */
export const EVENTS_SUBPROTOCOL = 'ls';

/** Tab IDs are made by the page (a 36-character GUID in the reference client). */
export const TAB_ID_PATTERN = /^[A-Za-z0-9_-]{8,64}$/;

export interface RegisterFrame {
  cmd: 'Register';
  tabId: string;
  location: string;
  /** Additive: the last event id the client has seen, so a reconnect is not sent it twice. */
  lastEventId?: number;
}
export interface PingFrame {
  cmd: 'Ping';
}
export interface UnregisterFrame {
  cmd: 'Unregister';
}
export type ClientFrame = RegisterFrame | PingFrame | UnregisterFrame;

/** An event on its way to a tab, before the tab's stream gives it an id. */
export interface TabEvent {
  type: string;
  data: unknown;
}

/** What a transport writes: an event with its per-tab increasing id (the id is additive to the reference clients' `{type, data}`, docs/events.md). */
export interface EventFrame extends TabEvent {
  id: number;
}

/**
 * Parses one text frame from a client. Returns undefined for anything that is not exactly one
 * of the three commands with well-typed fields; nothing in it is ever evaluated.
 */
export function parseClientFrame(text: string): ClientFrame | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
  const frame = value as Record<string, unknown>;
  switch (frame.cmd) {
    case 'Register': {
      const { tabId, location, lastEventId } = frame;
      if (typeof tabId !== 'string' || !TAB_ID_PATTERN.test(tabId)) return undefined;
      if (typeof location !== 'string' || location.length > 4096) return undefined;
      if (lastEventId !== undefined && !(Number.isSafeInteger(lastEventId) && (lastEventId as number) >= 0)) return undefined;
      return lastEventId === undefined
        ? { cmd: 'Register', tabId, location }
        : { cmd: 'Register', tabId, location, lastEventId: lastEventId as number };
    }
    case 'Ping':
      return { cmd: 'Ping' };
    case 'Unregister':
      return { cmd: 'Unregister' };
    default:
      return undefined;
  }
}
