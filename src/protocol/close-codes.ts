/**
 * WebSocket close codes (RFC 6455 §7.4.2 leaves 4000-4999 to applications). The close reason
 * carries the catalogue code (src/errors.ts) so a client can tell them apart. Here, at the bottom, so the
 * service and the browser script (src/browser) read the same numbers.
 */
export const closeCodes = {
  /** A frame that is not JSON, or not one of Register / Ping / Unregister. */
  frameInvalid: 4400,
  /** Register of a tab bound to another session. */
  tabSessionMismatch: 4403,
  /** No frame within pingTimeoutSeconds. */
  pingTimeout: 4408,
  /** Register of one tab too many for the session (config `tabsPerSession`). */
  tabLimitReached: 4429,
  /** The same tab connected again; the older connection is closed. */
  replaced: 4409,
  /**
   * The store or the shared state stayed unreachable while a Register waited for it (the reason is the
   * outage's catalogue code). IANA's registry of close codes (RFC 6455 §11.7) names 1013 "Try Again
   * Later": the client reconnects after a pause, with the same tab.
   */
  tryAgainLater: 1013,
  /** The service is shutting down. */
  goingAway: 1001,
} as const;
