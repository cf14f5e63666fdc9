import { randomBytes } from 'node:crypto';
import type { OidcClient, OidcTokenAuth } from '../store/oidc-store.js';

/**
 * The rules for a relying party the operator registers (`tabwire oidc client add`, docs/cli.md "oidc"):
 * which redirect URIs are accepted, the name's bounds, fresh ids and secrets, and the registration as the
 * operator pastes it into the relying party's settings. Pure: no store, no I/O; the CLI parses and prints.
 */

/** Redirect URIs (and, separately, post-logout redirect URIs) per client. */
export const MAX_REDIRECT_URIS = 10;
/** A URI longer than this is a mistake (a pasted page), not a redirect endpoint. */
export const MAX_URI_LENGTH = 2048;
/** Characters (code points) of a client name: it is shown to the person in the signing app. */
export const MAX_NAME_LENGTH = 100;

export const ID_TOKEN_ALGS = ['EdDSA', 'ES256'] as const;
export type IdTokenAlg = (typeof ID_TOKEN_ALGS)[number];

/** A rule the operator's input breaks; the message names the value and why. */
export class ClientRuleError extends Error {
  override name = 'ClientRuleError';
}

/** What the operator asks for, before the rules. */
export interface ClientRequest {
  redirectUris: readonly string[];
  postLogoutRedirectUris: readonly string[];
  name: string | null;
  /** `none`: a public client, no secret; the provider then requires PKCE (RFC 9700 §2.1.1). */
  tokenAuth: OidcTokenAuth;
  pairwise: boolean;
  idTokenAlg: IdTokenAlg;
}

/** `value` quoted for a message: anything but printable ASCII as \u{…}, so a message cannot drive a terminal. */
const quote = (value: string): string =>
  `"${value.replace(/[^\x20-\x7e]/gu, (c) => `\\u{${c.codePointAt(0)!.toString(16)}}`)}"`;

/** The characters a URI may hold unencoded: unreserved, reserved and "%" (RFC 3986 §2). */
const URI_CHAR = /[A-Za-z0-9\-._~:/?#[\]@!$&'()*+,;=%]/u;

/** 127.0.0.0/8, [::1] and localhost, as the URL parser writes them (it normalises 127.1 and [0::1]). */
const isLoopback = (hostname: string): boolean =>
  hostname === 'localhost' || hostname === '[::1]' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname);

/**
 * Why `uri` cannot be a redirect URI, or undefined when it can. Accepted: an absolute https URL, or http to a
 * loopback host (RFC 8252 §7.3, for apps on the person's own machine), without a fragment (RFC 6749 §3.1.2)
 * and without user info. Private-use schemes (`com.example.app:/cb`, RFC 8252 §7.1) are refused: another app
 * can claim the same scheme and receive the code (RFC 8252 §8.6); native apps use a loopback or a claimed
 * https redirect instead. The string is kept exactly as given, because the provider compares exactly
 * (RFC 9700 §2.1), so characters a URI must not hold unencoded are refused rather than repaired.
 */
export function redirectUriProblem(uri: string): string | undefined {
  if (uri === '') return 'is empty';
  if (uri.length > MAX_URI_LENGTH) return `is longer than ${MAX_URI_LENGTH} characters`;
  for (const c of uri) {
    if (!URI_CHAR.test(c)) {
      const what = c === ' ' ? 'a space' : /[\x21-\x7e]/.test(c) ? `"${c}"` : `U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;
      return `contains ${what}, which a URI cannot hold unencoded (RFC 3986 §2); write it percent-encoded, and a host in its ASCII (punycode) form`;
    }
  }
  if (uri.includes('#')) return 'has a fragment (#…), which a redirect URI must not have (RFC 6749 §3.1.2)';
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):/.exec(uri)?.[1]?.toLowerCase();
  if (scheme === undefined) return 'is not an absolute URL: it needs a scheme and a host, such as https://rp.example/callback';
  if (scheme !== 'https' && scheme !== 'http') {
    return `uses the scheme ${scheme}:, but only https, or http to a loopback host, is allowed (private-use schemes of native apps are not supported: use http://127.0.0.1:PORT/… or a claimed https URL)`;
  }
  if (!uri.slice(scheme.length + 1).startsWith('//')) return `is not an absolute URL: ${scheme}: must be followed by //host`;
  // The authority as written: the URL parser would read https:///cb as https://cb/, a host nobody wrote.
  const authority = /^[^/?]*/.exec(uri.slice(scheme.length + 3))![0];
  if (authority === '') return 'has no host after //';
  if (authority.includes('@')) return 'carries a user name or password (user@host), which a redirect URI must not';
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return 'is not a valid URL';
  }
  if (scheme === 'http' && !isLoopback(url.hostname)) {
    return `uses http with the host ${url.hostname}, which is not loopback: use https (RFC 6749 §3.1.2.1), or http only with 127.0.0.1, [::1] or localhost (RFC 8252 §7.3)`;
  }
  return undefined;
}

/** Checks a list of redirect URIs (`what`: "redirect URI" or "post-logout redirect URI"); throws ClientRuleError. */
function checkUris(uris: readonly string[], what: string): void {
  if (uris.length > MAX_REDIRECT_URIS) throw new ClientRuleError(`${uris.length} ${what}s given; a client has at most ${MAX_REDIRECT_URIS}`);
  const seen = new Set<string>();
  for (const uri of uris) {
    const problem = redirectUriProblem(uri);
    if (problem !== undefined) throw new ClientRuleError(`${what} ${quote(uri)} ${problem}`);
    if (seen.has(uri)) throw new ClientRuleError(`${what} ${quote(uri)} is given twice`);
    seen.add(uri);
  }
}

/**
 * Why `name` cannot be a client name, or undefined. It is shown to the person who logs in ("… asks you to log
 * in"), so it is one line of visible text: no control, format (bidirectional overrides, zero-width) or line
 * separator characters, which could disguise what the person reads.
 */
export function clientNameProblem(name: string): string | undefined {
  if (name.trim() === '') return 'is empty';
  const length = [...name].length;
  if (length > MAX_NAME_LENGTH) return `has ${length} characters; at most ${MAX_NAME_LENGTH}`;
  if (name !== name.trim()) return 'starts or ends with a space';
  const hidden = /[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Zl}\p{Zp}]/u.exec(name)?.[0];
  if (hidden !== undefined) return `contains U+${hidden.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}, a control or invisible character`;
  return undefined;
}

/**
 * Pairwise subjects are computed per sector, which without a sector_identifier_uri is the redirect URIs' host
 * (OpenID Connect Core §8.1); tabwire registers none, so a pairwise client's redirect URIs share one host
 * (with its port, as the provider compares it).
 */
function checkPairwise(uris: readonly string[]): void {
  const hosts = [...new Set(uris.map((uri) => new URL(uri).host))];
  if (hosts.length > 1) {
    throw new ClientRuleError(
      `--pairwise needs every redirect URI on one host, but they are on ${hosts.join(', ')} (the pairwise subject is computed per host, OpenID Connect Core §8.1): register one client per host`,
    );
  }
}

/** Random bytes; tests pass their own. */
export type RandomBytes = (size: number) => Buffer;

/**
 * A fresh client id: 16 random bytes, 22 characters base64url. One that would start with "-" is drawn again,
 * so `tabwire oidc client remove <client_id>` never reads an id as a flag.
 */
export function newClientId(random: RandomBytes = randomBytes): string {
  for (;;) {
    const id = random(16).toString('base64url');
    if (!id.startsWith('-')) return id;
  }
}

/** A fresh client secret: 32 random bytes (256 bits), 43 characters base64url. */
export const newClientSecret = (random: RandomBytes = randomBytes): string => random(32).toString('base64url');

/** The client the request describes, with a fresh id (and a secret unless public); throws ClientRuleError. */
export function newClient(request: ClientRequest, now: number, random: RandomBytes = randomBytes): OidcClient {
  if (request.redirectUris.length === 0) throw new ClientRuleError('a client needs at least one redirect URI');
  checkUris(request.redirectUris, 'redirect URI');
  checkUris(request.postLogoutRedirectUris, 'post-logout redirect URI');
  if (request.name !== null) {
    const problem = clientNameProblem(request.name);
    if (problem !== undefined) throw new ClientRuleError(`client name ${quote(request.name)} ${problem}`);
  }
  if (request.pairwise) checkPairwise(request.redirectUris);
  return {
    clientId: newClientId(random),
    clientSecret: request.tokenAuth === 'none' ? null : newClientSecret(random),
    tokenAuth: request.tokenAuth,
    subjectType: request.pairwise ? 'pairwise' : 'public',
    idTokenAlg: request.idTokenAlg,
    name: request.name,
    redirectUris: [...request.redirectUris],
    postLogoutRedirectUris: [...request.postLogoutRedirectUris],
    createdAt: now,
  };
}

/** `public` (no secret, PKCE) or `confidential`, as OAuth 2.0 names the client types (RFC 6749 §2.1). */
export const clientType = (client: Pick<OidcClient, 'tokenAuth'>): 'public' | 'confidential' =>
  client.tokenAuth === 'none' ? 'public' : 'confidential';

/**
 * The client as a registration response (OpenID Connect Dynamic Client Registration 1.0 §3.2, RFC 7591
 * §3.2.1): the metadata names relying-party libraries take. `client_secret` only for a confidential client,
 * with `client_secret_expires_at` 0 (it does not expire); `client_name` only when one was given.
 */
export function clientRegistration(client: OidcClient): Record<string, unknown> {
  return {
    client_id: client.clientId,
    ...(client.clientSecret === null ? {} : { client_secret: client.clientSecret, client_secret_expires_at: 0 }),
    client_id_issued_at: Math.floor(client.createdAt / 1000),
    ...(client.name === null ? {} : { client_name: client.name }),
    redirect_uris: client.redirectUris,
    post_logout_redirect_uris: client.postLogoutRedirectUris,
    token_endpoint_auth_method: client.tokenAuth,
    subject_type: client.subjectType,
    id_token_signed_response_alg: client.idTokenAlg,
  };
}
