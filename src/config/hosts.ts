import ipaddr from 'ipaddr.js';

/**
 * The names one machine answers on alike (URL host spelling): a browser on the machine reaches a
 * loopback deployment at any of them, and people type `localhost` where the default says 127.0.0.1.
 */
const LOOPBACK_NAMES: readonly string[] = ['127.0.0.1', 'localhost', '[::1]'];

/**
 * The origins that name the same loopback service as `base` (same scheme and port, host 127.0.0.1,
 * localhost or [::1]), `base`'s own included; empty when `base` is not one of those three hosts, so
 * a deployment reached by any other name never has an origin added (docs/configuration.md).
 */
export function loopbackAliases(base: URL): string[] {
  if (!LOOPBACK_NAMES.includes(base.hostname)) return [];
  return LOOPBACK_NAMES.map((name) => {
    const alias = new URL(base.origin);
    alias.hostname = name;
    return alias.origin;
  });
}

/**
 * True for an address that means "every interface" to listen() but no host to a browser
 * (0.0.0.0/8, `::`; RFC 1122 §3.2.1.3, RFC 4291 §2.5.2), with or without URL brackets.
 */
export function isUnspecifiedAddress(host: string): boolean {
  const bare = host.replace(/^\[(.*)\]$/, '$1');
  return ipaddr.isValid(bare) && ipaddr.parse(bare).range() === 'unspecified';
}
