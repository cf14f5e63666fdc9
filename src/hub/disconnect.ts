import { TabwireError, type OutageCode } from '../errors.js';
import { closeCodes } from '../protocol/close-codes.js';

/**
 * One way a tab's connection ends, with what each transport makes of it (docs/events.md "How a connection
 * ends"): a WebSocket closes with `closeCode` and `reason` (RFC 6455 §7.4; protocol/close-codes.ts), a
 * long-poll answers `problem` (RFC 9457, the errors.ts catalogue), or `200 []` when `problem` is undefined:
 * an end that is no error of the page's, which the reference scripts must never see as one (they `alert()`
 * any non-200). Both read the same value, so the two transports cannot tell a page different things.
 */
export type Disconnect =
  /** Not a frame of the protocol, or a second tab on one socket (a long-poll has no frames: never made for one). */
  | Ending<'frame_invalid', typeof closeCodes.frameInvalid, 'frame_invalid' | 'tab_already_registered', TabwireError>
  /** The tab is bound to another session: the page takes a new tab id. */
  | Ending<'tab_session_mismatch', typeof closeCodes.tabSessionMismatch, 'tab_session_mismatch', TabwireError>
  /** The session holds `tabsPerSession` tabs already; idle ones are let go after `tabIdleSeconds` (the problem's Retry-After). */
  | Ending<'tab_limit_reached', typeof closeCodes.tabLimitReached, 'tab_limit_reached', TabwireError>
  /** An XMPP message written to the socket was not confirmed in time (docs/xmpp.md "Delivered means confirmed"). */
  | Ending<'confirm_timeout', typeof closeCodes.pingTimeout, 'confirm_timeout', undefined>
  /** No frame from the client for `pingTimeoutSeconds`. */
  | Ending<'ping_timeout', typeof closeCodes.pingTimeout, 'ping_timeout', undefined>
  /** More live connections of the tab than it may have: the oldest goes (a superseded poll is answered `[]`). */
  | Ending<'replaced', typeof closeCodes.replaced, 'replaced', undefined>
  /** The node is stopping: the page goes on elsewhere (a long-poll's answer also closes its HTTP connection). */
  | Ending<'shutdown', typeof closeCodes.goingAway, 'shutdown', undefined>
  /** The store or Redis stayed unreachable for the whole wait: try again later, same tab (docs/events.md "Outages"). */
  | Ending<'unavailable', typeof closeCodes.tryAgainLater, OutageCode, TabwireError>
  /** A fault of the service (logged where it happened). */
  | Ending<'internal_error', typeof INTERNAL_ERROR, 'internal_error', TabwireError>;

/** The fields every ending has; `kind` tells them apart. */
interface Ending<K extends string, C extends number, R extends string, P extends TabwireError | undefined> {
  readonly kind: K;
  readonly closeCode: C;
  /** The close frame's reason: the catalogue code for refusals (RFC 6455 §7.1.6: at most 123 bytes). */
  readonly reason: R;
  /** What a long-poll answers; undefined: `200 []`. */
  readonly problem: P;
}

/** RFC 6455 §7.4.1: "Internal Error", an unexpected condition in the server. */
const INTERNAL_ERROR = 1011;

/** Endings without a problem are the same every time: made once. */
const fixed = <D extends Disconnect>(d: D): D => Object.freeze(d);

/** The one place an outcome becomes a Disconnect (the tab session and the hub make them; transports only read them). */
export const disconnects = {
  frameInvalid: (reason: 'frame_invalid' | 'tab_already_registered'): Disconnect => ({
    kind: 'frame_invalid',
    closeCode: closeCodes.frameInvalid,
    reason,
    problem: new TabwireError('validation_failed', reason === 'frame_invalid' ? 'Not a frame of the event channel' : 'Another tab is registered on this connection'),
  }),
  tabSessionMismatch: (tabId: string): Disconnect => ({
    kind: 'tab_session_mismatch',
    closeCode: closeCodes.tabSessionMismatch,
    reason: 'tab_session_mismatch',
    problem: new TabwireError('tab_session_mismatch', `Tab "${tabId}" belongs to another session`),
  }),
  tabLimitReached: (retryAfterSeconds: number): Disconnect => ({
    kind: 'tab_limit_reached',
    closeCode: closeCodes.tabLimitReached,
    reason: 'tab_limit_reached',
    problem: new TabwireError('tab_limit_reached', undefined, { retryAfter: retryAfterSeconds }),
  }),
  /** `error` is the outage (errors.ts `isOutage`): its code is the close reason, and it is the problem as it is (Retry-After and all). */
  unavailable: (error: TabwireError & { code: OutageCode }): Disconnect => ({ kind: 'unavailable', closeCode: closeCodes.tryAgainLater, reason: error.code, problem: error }),
  internalError: (): Disconnect => ({ kind: 'internal_error', closeCode: INTERNAL_ERROR, reason: 'internal_error', problem: new TabwireError('internal_error') }),
  confirmTimeout: fixed({ kind: 'confirm_timeout', closeCode: closeCodes.pingTimeout, reason: 'confirm_timeout', problem: undefined }),
  pingTimeout: fixed({ kind: 'ping_timeout', closeCode: closeCodes.pingTimeout, reason: 'ping_timeout', problem: undefined }),
  replaced: fixed({ kind: 'replaced', closeCode: closeCodes.replaced, reason: 'replaced', problem: undefined }),
  shutdown: fixed({ kind: 'shutdown', closeCode: closeCodes.goingAway, reason: 'shutdown', problem: undefined }),
} as const;
