/**
 * Where an event goes: a tab as held by one session (docs/events.md "Results belong to the session
 * that asked"). A tab id released by one session and taken by another is another address, so the
 * second session inherits nothing addressed to the first: no buffered event, no result, no handler.
 */
export interface TabAddress {
  readonly tabId: string;
  /** The session hash the tab was bound to when the event's cause (a QR code, a handler) was made. */
  readonly session: string;
}

/** A map key for an address; tab ids never contain ':' (protocol/frames.ts TAB_ID_PATTERN). */
export const addressKey = (address: TabAddress): string => `${address.session}:${address.tabId}`;
