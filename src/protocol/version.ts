/**
 * The version of the wire protocol this service speaks (docs/protocol.md "Versioning"). It changes only
 * when a change would break a client written against the previous version; additive changes (a new
 * optional field, event, header or endpoint) keep it. It is independent of the package version.
 * Imports nothing, so the browser client may read it too.
 */
export const PROTOCOL_VERSION = 1;

/** The response header every HTTP answer of the service carries, with PROTOCOL_VERSION as its value. */
export const PROTOCOL_VERSION_HEADER = 'Tabwire-Protocol-Version';
