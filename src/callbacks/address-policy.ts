import { lookup } from 'node:dns/promises';
import ipaddr from 'ipaddr.js';
import { TabwireError } from '../errors.js';

/** Where callbacks may go (docs/backend.md "Callback URL policy"). */
export interface CallbackPolicy {
  /** Development flag: plain http to a loopback address. */
  allowHttpLoopback: boolean;
  /** Host names or IP literals exempt from the address checks (e.g. an internal backend). */
  allowedHosts: readonly string[];
}

/** Resolves a host name to all its addresses; injectable so tests never touch DNS. */
export type Resolver = (hostname: string) => Promise<string[]>;

export const systemResolver: Resolver = async (hostname) => (await lookup(hostname, { all: true, verbatim: true })).map((a) => a.address);

const refuse = (reason: string): TabwireError => new TabwireError('callback_url_refused', reason);

/**
 * The IPv4 address an IPv6 address carries in its last 32 bits when it is only another spelling of it:
 * IPv4-mapped `::ffff:a.b.c.d` (RFC 4291 §2.5.5.2) and IPv4-compatible `::a.b.c.d` (§2.5.5.1, deprecated,
 * but some stacks still reach the IPv4 host with it). `::` and `::1` are IPv6's own unspecified and loopback.
 */
function embeddedIPv4(address: ipaddr.IPv6): ipaddr.IPv4 | undefined {
  const p = address.parts;
  if (p[0] !== 0 || p[1] !== 0 || p[2] !== 0 || p[3] !== 0 || p[4] !== 0) return undefined;
  if (p[5] === 0xffff) return address.toIPv4Address();
  if (p[5] !== 0 || (p[6] === 0 && (p[7] === 0 || p[7] === 1))) return undefined;
  return new ipaddr.IPv4([p[6]! >> 8, p[6]! & 0xff, p[7]! >> 8, p[7]! & 0xff]);
}

/** The range an address falls in (ipaddr.js names); an IPv6 spelling of an IPv4 address is judged as that IPv4. */
function rangeOf(address: string): string {
  const parsed = ipaddr.parse(address);
  if (parsed.kind() === 'ipv4') return parsed.range();
  return (embeddedIPv4(parsed as ipaddr.IPv6) ?? parsed).range();
}

/**
 * Only public unicast addresses: loopback, private (RFC 1918), link-local (with the 169.254.169.254
 * metadata address), unique-local, CGNAT (100.64/10), unspecified, multicast, reserved ... are refused.
 */
export function publicAddress(address: string): boolean {
  return rangeOf(address) === 'unicast';
}

const bareHost = (url: URL): string => url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
const isAllowlisted = (host: string, policy: CallbackPolicy): boolean => policy.allowedHosts.some((h) => h.toLowerCase() === host);
const isLoopbackHost = (host: string): boolean => host === 'localhost' || (ipaddr.isValid(host) && rangeOf(host) === 'loopback');

/**
 * Checks what can be checked without the network: a URL, https (http only to loopback with the
 * development flag), no credentials, and an IP-literal host in an allowed range. The WHATWG URL
 * parser has already turned decimal and octal forms (`https://2130706433`) into dotted IPv4.
 */
export function checkCallbackUrl(raw: string, policy: CallbackPolicy): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw refuse('service is not an absolute URL');
  }
  if (url.username !== '' || url.password !== '') throw refuse('service must not carry credentials');
  const host = bareHost(url);
  if (url.protocol === 'http:') {
    if (!(policy.allowHttpLoopback && isLoopbackHost(host))) throw refuse('service must be https (plain http only to loopback, with the development flag)');
    return url;
  }
  if (url.protocol !== 'https:') throw refuse(`service must be https, not ${url.protocol}`);
  if (isAllowlisted(host, policy)) return url;
  if (ipaddr.isValid(host) && !publicAddress(host)) throw refuse(`service address ${host} is in the ${rangeOf(host)} range`);
  return url;
}

/** The addresses a host name resolves to must all be public (unless allowlisted). */
export async function checkResolvedHost(url: URL, policy: CallbackPolicy, resolve: Resolver): Promise<void> {
  const host = bareHost(url);
  if (ipaddr.isValid(host) || isAllowlisted(host, policy) || (url.protocol === 'http:' && isLoopbackHost(host))) return;
  let addresses: string[];
  try {
    addresses = await resolve(host);
  } catch {
    throw refuse(`service host ${host} does not resolve`);
  }
  const bad = addresses.find((a) => !publicAddress(a));
  if (addresses.length === 0) throw refuse(`service host ${host} does not resolve`);
  if (bad !== undefined) throw refuse(`service host ${host} resolves to ${bad}, in the ${rangeOf(bad)} range`);
}

/**
 * A `net` lookup for the delivery agent: resolves, then refuses the connection unless every
 * address is allowed. The check happens on the address actually connected to, so a name that
 * changes its answer between registration and delivery (DNS rebinding) gains nothing.
 */
export function filteringLookup(policy: CallbackPolicy, resolve: Resolver) {
  return (
    hostname: string,
    options: { all?: boolean },
    callback: (err: NodeJS.ErrnoException | null, address: string | { address: string; family: number }[], family?: number) => void,
  ): void => {
    const host = hostname.toLowerCase();
    resolve(host).then(
      (addresses) => {
        const exempt = isAllowlisted(host, policy) || (policy.allowHttpLoopback && host === 'localhost');
        const bad = exempt ? undefined : addresses.find((a) => !publicAddress(a));
        if (addresses.length === 0 || bad !== undefined) {
          const err: NodeJS.ErrnoException = new Error(`callback address refused: ${host} -> ${bad ?? 'nothing'}`);
          err.code = 'ECALLBACKADDRESS';
          return callback(err, '');
        }
        const entries = addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
        if (options.all) callback(null, entries);
        else callback(null, entries[0]!.address, entries[0]!.family);
      },
      (err: NodeJS.ErrnoException) => callback(err, ''),
    );
  };
}

/** Checked callback URLs remembered (the policy is fixed for the process; a backend has one URL). */
const CHECKED_URLS_KEPT = 1_024;

/**
 * `checkCallbackUrl` without the network, remembered per URL text (the URL it accepted, or null when
 * refused): it depends only on the text and the policy, both fixed. Name resolution is not remembered
 * here: `filteringLookup` checks every connection.
 */
export class CheckedUrls {
  private readonly checked = new Map<string, URL | null>();

  constructor(private readonly policy: CallbackPolicy) {}

  allowed(raw: string): URL | null {
    let url = this.checked.get(raw);
    if (url === undefined) {
      try {
        url = checkCallbackUrl(raw, this.policy);
      } catch {
        url = null;
      }
      if (this.checked.size >= CHECKED_URLS_KEPT) this.checked.clear();
      this.checked.set(raw, url);
    }
    return url;
  }
}
