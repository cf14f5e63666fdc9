/**
 * The problem+json `code`s (RFC 9457, docs/errors.md) a client acts on, besides the HTTP status. The
 * catalogue in src/errors.ts holds every code with its status and title, and its type requires these keys,
 * so the service and the browser script (src/browser) cannot drift apart.
 */
export const problemCodes = {
  /** 404: the tab is not (or no longer) registered; register it again, same tab ID. */
  tabNotRegistered: 'tab_not_registered',
  /** 403: the tab belongs to another session; take a new tab ID. */
  tabSessionMismatch: 'tab_session_mismatch',
} as const;

export type ClientProblemCode = (typeof problemCodes)[keyof typeof problemCodes];
