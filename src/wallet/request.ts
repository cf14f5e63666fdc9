/**
 * A signing request as the wallet handles it: where the signUrl comes from (an app link), whether the
 * wallet may sign it (the host check), and what would be disclosed. Pure functions (no DOM), so the
 * rules are unit-tested without a browser.
 */
import type { SignInfo } from '../protocol/signing.js';
import { buildChallenge, nonceOf } from './challenge.js';

export type { SignInfo } from '../protocol/signing.js';

/** An identity as the Agent API shows it (times in Unix seconds). */
export interface IdentityView {
  Id: string;
  Provider: string;
  State: string;
  Created: number;
  Updated: number;
  From: number;
  To: number;
  Properties: Record<string, string>;
  Attachments: Array<{ Id: string; ContentType: string; FileName: string; Signature: string; Timestamp: number }>;
  ClientKeyName: string;
  ClientPubKey: string;
}

const SIGN_PATH = /^\/QuickLogin\/Sign\/[A-Za-z0-9_-]{1,64}$/;

/**
 * The signUrl an app link carries: `#sign=<signUrl>` (preferred: a fragment never reaches a server
 * log) or `?sign=<signUrl>`, percent-encoded. Undefined when the address carries none.
 */
export function signUrlFromLocation(location: { hash: string; search: string }): string | undefined {
  const fromHash = new URLSearchParams(location.hash.replace(/^#/, '')).get('sign');
  if (fromHash) return fromHash;
  return new URLSearchParams(location.search).get('sign') ?? undefined;
}

export class RequestRefused extends Error {
  override name = 'RequestRefused';
}

/**
 * Checks text is a signUrl of the service the identity belongs to, before anything is fetched. A
 * signUrl of any other host is refused: the identity is registered with one service, and its key
 * signs only that service's challenges (another service could not check them, and a page that made
 * the wallet sign for a host the person did not choose is exactly what the check is for).
 */
export function checkSignUrl(text: string, serviceBase: string): URL {
  let url: URL;
  try {
    url = new URL(text.trim());
  } catch {
    throw new RequestRefused('That is not a link. Paste the whole sign link (it ends in /QuickLogin/Sign/ and a code).');
  }
  if ((url.protocol !== 'https:' && url.protocol !== 'http:') || !SIGN_PATH.test(url.pathname) || url.search !== '' || url.hash !== '') {
    throw new RequestRefused('That is not a sign link: its path must be /QuickLogin/Sign/ followed by a code.');
  }
  const service = new URL(serviceBase);
  if (url.host !== service.host || url.protocol !== service.protocol) {
    throw new RequestRefused(
      `This request is for ${url.host}, but your identity belongs to ${service.host}. The wallet signs only for the service your identity belongs to, so it will not sign this.`,
    );
  }
  return url;
}

/** Refuses a request whose challenge says anything but what the wallet shows (docs/signing.md "What is signed"). */
export function checkChallenge(info: SignInfo, signUrl: URL): void {
  const expected = buildChallenge({
    code: info.code,
    purpose: info.purpose,
    origin: info.origin,
    service: signUrl.host,
    expires: info.expires,
    nonce: nonceOf(info.challenge),
  });
  if (expected !== info.challenge || signUrl.pathname !== `/QuickLogin/Sign/${info.code}`) {
    throw new RequestRefused('The request does not match what it claims (its challenge differs from the fields shown), so the wallet will not sign it.');
  }
}

/** Names of a filter (`"FIRST, LAST"`), trimmed; null when absent or blank (no filtering, docs/signing.md). */
export function filterNames(filter: string | null): string[] | null {
  if (filter === null) return null;
  const names = filter.split(',').map((n) => n.trim()).filter((n) => n !== '');
  return names.length === 0 ? null : names;
}

/** What the service would put in the result if this identity approved: the properties and attachment names that pass the filters. */
export function disclosed(identity: IdentityView, info: SignInfo): { properties: Array<[string, string]>; attachments: string[] } {
  const props = filterNames(info.propertyFilter);
  const files = filterNames(info.attachmentFilter);
  return {
    properties: Object.entries(identity.Properties).filter(([name]) => props === null || props.includes(name)),
    attachments: identity.Attachments.map((a) => a.FileName).filter((name) => files === null || files.includes(name)),
  };
}
