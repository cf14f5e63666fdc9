import type { ClientProblemCode } from './protocol/problem-codes.js';

/**
 * The one error catalogue (docs/errors.md). Every refusal the service makes has a stable
 * `code` here, an HTTP status, and a title; HTTP answers are RFC 9457 problem+json built from it.
 */
export const errorCatalogue = {
  validation_failed: { status: 400, title: 'The request is not valid' },
  public_key_refused: { status: 400, title: 'The public key proves nothing (not canonical, not on the curve, or of small order)' },
  malformed_json: { status: 400, title: 'The request body is not valid JSON' },
  request_malformed: { status: 400, title: 'The request is not well-formed HTTP/1.1' },
  url_malformed: { status: 400, title: 'The URL is not validly percent-encoded' },
  request_kind_ambiguous: { status: 400, title: 'The body is neither a QR request nor a backend registration' },
  tab_id_missing: { status: 400, title: 'The X-TabID header is missing or not a valid tab ID' },
  callback_url_refused: { status: 400, title: 'The callback URL is not allowed' },
  subprotocol_required: { status: 400, title: 'The WebSocket subprotocol "ls" is required' },
  websocket_handshake_invalid: { status: 400, title: 'The WebSocket handshake is not valid' },
  preflight_invalid: { status: 400, title: 'The CORS preflight request is not valid' },
  websocket_required: { status: 426, title: 'This endpoint only accepts WebSocket upgrades' },
  websocket_version_unsupported: { status: 426, title: 'Only WebSocket version 13 is supported' },
  token_missing: { status: 401, title: 'An Authorization: Bearer token is required' },
  token_malformed: { status: 401, title: 'The bearer token is not a well-formed JWT' },
  token_expired: { status: 401, title: 'The bearer token has expired' },
  token_not_yet_valid: { status: 401, title: 'The bearer token is not valid yet' },
  token_algorithm_not_allowed: { status: 401, title: 'The bearer token uses an algorithm that is not accepted' },
  token_key_unknown: { status: 401, title: 'The bearer token names an unknown key' },
  token_signature_invalid: { status: 401, title: 'The bearer token signature does not verify' },
  token_claims_invalid: { status: 401, title: 'The bearer token was not issued for this service' },
  token_account_unknown: { status: 401, title: 'The account of the bearer token does not exist' },
  account_disabled: { status: 401, title: 'The account is disabled' },
  credentials_invalid: { status: 401, title: 'Wrong user name or password' },
  api_key_missing: { status: 401, title: 'An operator API key (X-Api-Key) is required' },
  api_key_invalid: { status: 403, title: 'The operator API key is not valid' },
  session_missing: { status: 403, title: 'No session cookie; register the tab first' },
  origin_not_allowed: { status: 403, title: 'The Origin is not allowed' },
  cors_origin_not_allowed: { status: 403, title: 'The Origin is not allowed to make cross-origin requests' },
  tab_session_mismatch: { status: 403, title: 'The tab belongs to another session' },
  tab_owned_by_other_account: { status: 403, title: 'The tab carries another account\'s event handlers' },
  identity_not_approved: { status: 403, title: 'The identity is not approved for signing' },
  identity_key_refused: { status: 403, title: 'The identity\'s key proves nothing; it may not sign' },
  signature_invalid: { status: 403, title: 'The signature does not verify' },
  binding_required: { status: 403, title: 'The login code is bound to the signing app that fetched it; send its Tabwire-Binding token' },
  not_found: { status: 404, title: 'No such resource' },
  recipient_unknown: { status: 404, title: 'No such agent account' },
  tab_not_registered: { status: 404, title: 'The tab is not registered' },
  service_not_registered: { status: 404, title: 'The serviceId is not registered' },
  code_not_found: { status: 404, title: 'No such login code' },
  identity_not_found: { status: 404, title: 'No such identity' },
  method_not_allowed: { status: 405, title: 'Method not allowed' },
  request_timeout: { status: 408, title: 'The request was not received in time' },
  account_exists: { status: 409, title: 'The user name is taken' },
  service_mismatch: { status: 409, title: 'The serviceId belongs to another callback or session' },
  code_already_used: { status: 409, title: 'The login code has already been signed' },
  code_bound: { status: 409, title: 'Another signing app has already fetched this login code' },
  code_expired: { status: 410, title: 'The login code has expired' },
  code_too_old: { status: 410, title: 'The QR code is too old: scan the one the page shows now' },
  service_expired: { status: 410, title: 'The backend registration has expired' },
  body_too_large: { status: 413, title: 'The request body is too large' },
  uri_too_long: { status: 414, title: 'A path segment of the URL is too long' },
  header_too_large: { status: 431, title: 'The request headers are too large' },
  xml_invalid: { status: 400, title: 'The XML payload is not valid' },
  rate_limited: { status: 429, title: 'Too many attempts; try again later' },
  tab_limit_reached: { status: 429, title: 'The session holds as many tabs as it may; idle ones are let go after tabIdleSeconds' },
  handler_limit_reached: { status: 507, title: 'The tab carries as many event handlers as it may; remove one first' },
  unsupported_media_type: { status: 415, title: 'Unsupported content type' },
  expectation_failed: { status: 417, title: 'The expectation in the Expect header is not supported' },
  internal_error: { status: 500, title: 'Internal error' },
  xmpp_unavailable: { status: 503, title: 'The XMPP server is not reachable' },
  store_unavailable: { status: 503, title: 'The service\'s store is not reachable; try again shortly' },
  shared_state_unavailable: { status: 503, title: 'The service\'s shared state (cluster mode) is not reachable; try again shortly' },
  shutting_down: { status: 503, title: 'The service is shutting down' },
  mailbox_full: { status: 507, title: 'The recipient\'s message store is full' },
  identity_limit_reached: { status: 507, title: 'The account holds as many identities as it may' },
} as const satisfies Record<string, { status: number; title: string }> & Record<ClientProblemCode, unknown>;

export type ErrorCode = keyof typeof errorCatalogue;

/**
 * Outages: the request was fine, but a component it needs (the store, or Redis in a cluster) cannot be
 * reached now. Answered 503 with `Retry-After` over HTTP and close 1013 on a WebSocket; clients retry
 * with the same tab (docs/errors.md "Outages").
 */
export const OUTAGE_CODES = ['store_unavailable', 'shared_state_unavailable'] as const satisfies readonly ErrorCode[];
export type OutageCode = (typeof OUTAGE_CODES)[number];

/** A refusal with a catalogue code; thrown by domain and HTTP code, rendered as problem+json. */
export class TabwireError extends Error {
  override name = 'TabwireError';
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    detail?: string,
    readonly extra: Record<string, unknown> = {},
  ) {
    super(detail ?? errorCatalogue[code].title);
    this.status = errorCatalogue[code].status;
  }
}

/** Whether `err` is an outage refusal (OUTAGE_CODES): retry later, nothing was wrong with the request. */
export function isOutage(err: unknown): err is TabwireError & { code: OutageCode } {
  return err instanceof TabwireError && (OUTAGE_CODES as readonly ErrorCode[]).includes(err.code);
}

/** The refusal for shared state (Redis in a cluster) that did not answer; `cause` keeps the driver's error for the log. */
export function sharedStateUnavailable(cause: unknown): TabwireError {
  return Object.assign(new TabwireError('shared_state_unavailable', undefined, { retryAfter: 1 }), { cause });
}

// WebSocket close codes are wire facts the browser script reads too: protocol/close-codes.ts.
