/** The event server a page talks to: `host[:port]` and whether to use TLS. */
export interface EventHost {
  readonly host: string;
  readonly secure: boolean;
}

// A DNS name or IPv4 address, or a bracketed IPv6 address, with an optional port. Nothing else
// (no scheme, path, user info) so a meta tag cannot point the channel at a URL with extras.
const HOST_PATTERN = /^(?:[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?$/;

/** The trimmed `host[:port]`, or undefined when `value` is not one. */
export function parseHost(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  const host = value.trim();
  return HOST_PATTERN.test(host) ? host : undefined;
}

/** Meta tag names that declare the event server, strongest first (docs/events.md, then the reference client's). */
export const HOST_META_NAMES = ['tabwire-events', 'NEURON'] as const;

/**
 * The default event server: the first valid host among the meta tags' contents, else the page's
 * own host; TLS follows the page (an https page may not open ws:, and http pages use http).
 */
export function defaultHost(page: { host: string; protocol: string }, metaContents: readonly (string | undefined)[]): EventHost {
  const secure = page.protocol === 'https:';
  for (const content of metaContents) {
    const host = parseHost(content);
    if (host !== undefined) return { host, secure };
  }
  return { host: page.host, secure };
}

/** The two endpoints on an event server (docs/events.md, "/ClientEvents"). */
export function endpoints(h: EventHost): { websocket: string; longPoll: string } {
  return {
    websocket: `${h.secure ? 'wss' : 'ws'}://${h.host}/ClientEventsWS`,
    longPoll: `${h.secure ? 'https' : 'http'}://${h.host}/ClientEvents`,
  };
}
