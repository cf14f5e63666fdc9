import { createHash, randomBytes, type KeyObject } from 'node:crypto';
import { fetchSignInfo, postDecision } from '../../src/cli/signer.js';
import type { OidcClient } from '../../src/store/oidc-store.js';
import type { Store } from '../../src/store/stores.js';
import { TestTab } from './tab.js';

/**
 * The steps of an OpenID Connect login as a browser takes them, without a browser: a cookie jar, the
 * authorization request, the login page's QR request, the signing app's approval, the completion and the
 * redirect back with the code. Each step may go to another node (cluster tests).
 */

/** A browser's cookies for one host: every cookie is sent everywhere (paths do not matter to these tests). */
export class CookieJar {
  private readonly cookies = new Map<string, string>();

  take(response: { headers: Headers }): void {
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const at = pair!.indexOf('=');
      const name = pair!.slice(0, at).trim();
      const value = pair!.slice(at + 1).trim();
      if (/expires=Thu, 01 Jan 1970/i.test(line) || value === '') this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  header(): string {
    return [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ');
  }

  get(name: string): string | undefined {
    return this.cookies.get(name);
  }
}

/** PKCE (RFC 7636): a verifier and its S256 challenge. */
export function pkce(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

export async function addClient(store: Store, overrides: Partial<OidcClient> = {}): Promise<OidcClient> {
  const client: OidcClient = {
    clientId: `client-${randomBytes(6).toString('base64url')}`,
    clientSecret: randomBytes(32).toString('base64url'),
    tokenAuth: 'client_secret_basic',
    subjectType: 'public',
    idTokenAlg: 'EdDSA',
    name: 'Test Shop',
    redirectUris: ['http://127.0.0.1:9/callback'],
    postLogoutRedirectUris: [],
    createdAt: Date.now(),
    ...overrides,
  };
  if (!(await store.oidcClients.insert(client))) throw new Error('client id taken');
  return client;
}

export interface AuthorizeParams {
  client: OidcClient;
  scope?: string;
  redirectUri?: string;
  state?: string;
  nonce?: string;
  challenge?: string;
  extra?: Record<string, string>;
}

/** `GET /oidc/auth`: answers the raw response (a redirect to the login page, or to the RP with an error). */
export async function authorize(baseUrl: string, jar: CookieJar, p: AuthorizeParams): Promise<Response> {
  const query = new URLSearchParams({
    client_id: p.client.clientId,
    response_type: 'code',
    scope: p.scope ?? 'openid profile email',
    redirect_uri: p.redirectUri ?? p.client.redirectUris[0]!,
    state: p.state ?? randomBytes(8).toString('base64url'),
    nonce: p.nonce ?? randomBytes(8).toString('base64url'),
    ...(p.challenge ? { code_challenge: p.challenge, code_challenge_method: 'S256' } : {}),
    ...p.extra,
  });
  const response = await fetch(`${baseUrl}/oidc/auth?${query}`, { redirect: 'manual', headers: { cookie: jar.header() } });
  jar.take(response);
  return response;
}

/** The interaction uid from the login page's path. */
export function interactionUid(location: string): string {
  const match = /\/oidc\/interaction\/([A-Za-z0-9_-]+)$/.exec(new URL(location, 'http://x').pathname);
  if (!match) throw new Error(`not a login page: ${location}`);
  return match[1]!;
}

/** Loads the login page (which hands out the session cookie), opens the page's tab, and asks for a code as the page's helper does. */
export async function loginPageCode(baseUrl: string, wsUrl: string, jar: CookieJar, uid: string, origin: string): Promise<{ tab: TestTab; signUrl: string; status: number; body: unknown }> {
  const page = await fetch(`${baseUrl}/oidc/interaction/${uid}`, { headers: { cookie: jar.header() } });
  jar.take(page);
  if (page.status !== 200) throw new Error(`login page answered ${page.status}`);
  const session = jar.get('tabwire_sid');
  const tab = await TestTab.open(wsUrl, { cookie: session ? `tabwire_sid=${session}` : '', origin });
  await tab.next('CheckServerInstance');
  const qr = await fetch(`${baseUrl}/oidc/interaction/${uid}/QuickLogin`, {
    method: 'POST',
    headers: { cookie: jar.header(), origin, 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify({ mode: 'text', purpose: 'ignored', serviceId: '', tab: tab.tabId }),
  });
  const body = (await qr.json()) as { signUrl?: string };
  return { tab, signUrl: body.signUrl ?? '', status: qr.status, body };
}

/** The signing app: fetches the request, signs it with the identity's key. */
export async function approve(signUrl: string, legalId: string, key: KeyObject, decision: 'approve' | 'reject' = 'approve') {
  const info = await fetchSignInfo(signUrl);
  const answer = await postDecision(signUrl, info, legalId, key, decision);
  return { info, answer };
}

/** The page's completion once its tab heard the result; answers the status and body. */
export async function complete(baseUrl: string, jar: CookieJar, uid: string, tabId: string, origin: string): Promise<{ status: number; body: { redirectTo?: string; code?: string } }> {
  const response = await fetch(`${baseUrl}/oidc/interaction/${uid}/complete`, {
    method: 'POST',
    headers: { cookie: jar.header(), origin, 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify({ tab: tabId }),
  });
  return { status: response.status, body: (await response.json()) as { redirectTo?: string } };
}

/** Follows the provider's redirects (resume) until one leaves the provider: answers that location (the RP's callback). */
export async function followToRp(baseUrl: string, jar: CookieJar, location: string): Promise<URL> {
  let next = new URL(location, baseUrl);
  for (let hops = 0; hops < 5; hops++) {
    if (!next.pathname.startsWith('/oidc/')) return next;
    const response = await fetch(`${baseUrl}${next.pathname}${next.search}`, { redirect: 'manual', headers: { cookie: jar.header() } });
    jar.take(response);
    const to = response.headers.get('location');
    if (!to) throw new Error(`${next.pathname} answered ${response.status} without a redirect: ${await response.text()}`);
    next = new URL(to, baseUrl);
  }
  throw new Error('too many redirects');
}

/** `POST /oidc/token` with client_secret_basic (or none), answering the status and JSON body. */
export async function exchange(baseUrl: string, client: Pick<OidcClient, 'clientId' | 'clientSecret'>, form: Record<string, string>): Promise<{ status: number; body: Record<string, unknown> }> {
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' };
  if (client.clientSecret !== null) headers.authorization = `Basic ${Buffer.from(`${encodeURIComponent(client.clientId)}:${encodeURIComponent(client.clientSecret)}`).toString('base64')}`;
  const body = new URLSearchParams({ grant_type: 'authorization_code', ...(client.clientSecret === null ? { client_id: client.clientId } : {}), ...form });
  const response = await fetch(`${baseUrl}/oidc/token`, { method: 'POST', headers, body });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}
