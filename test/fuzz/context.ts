import { generateKeyPairSync, randomBytes, randomUUID, type KeyObject } from 'node:crypto';
import WebSocket from 'ws';
import { applicationMessage, type IdentityApplication } from '../../src/identity/application.js';
import { generateEd25519, privateKeyFromPem, signEd25519 } from '../../src/identity/keys.js';

/**
 * What the fuzzer knows about the service under test, so that part of its input is valid enough
 * to get past the first check (a bearer token, a session cookie, a live tab, a live login code,
 * an existing identity) and reach the code behind it. Built over HTTP and WebSocket only, so the
 * in-suite test and `npm run fuzz` against any URL prepare it the same way.
 */
export interface FuzzContext {
  host: string;
  port: number;
  baseUrl: string;
  wsUrl: string;
  /** Origins the service allows (the one of its public base URL first). */
  allowedOrigins: string[];
  /** The domain of agent JIDs (`user@domain`). */
  componentDomain: string;
  userName: string;
  /** A valid bearer token for `userName`, or undefined when no account could be made. */
  jwt: string | undefined;
  /** `tabwire_sid=…` of the session that owns `tabId`. */
  cookie: string;
  tabId: string;
  /** A login code issued to `tabId` (it may be signed or expire during the run). */
  code: string | undefined;
  /** An identity of `userName`'s account (state Created), for GetIdentity and ApplyId. */
  identityId: string | undefined;
  /** A live backend registration, when the service's resolver knows a callback host. */
  serviceId: string | undefined;
  /** A valid ApplyId body (fresh key, correct signature) the fuzzer mutates. */
  application: (IdentityApplication & { signature: string }) | undefined;
  /** A key the service does not know, to sign forged tokens with. */
  attackerKey: KeyObject;
  /** The service's public token key (JWK from /.well-known/jwks.json), for algorithm-confusion forgeries. */
  serviceJwk: Record<string, unknown> | undefined;
  /** Host names (with a public address) the service resolves for callback URLs; none against a real resolver. */
  callbackHosts: string[];
  /** Keeps the context's tab connected; closed by `release`. */
  socket: WebSocket | undefined;
  /** A live OpenID Connect login (docs/oidc.md), when the run was given a registered client. */
  oidc: OidcContext | undefined;
}

/** A registered OpenID Connect client (`tabwire oidc client add`), confidential with client_secret_basic. */
export interface OidcClientInfo {
  clientId: string;
  clientSecret: string;
  redirectUris: string[];
  postLogoutRedirectUris: string[];
}

/**
 * An authorization request's interaction as a browser holds it after loading the login page: its uid,
 * the cookies (the library's interaction cookies and the service's session) and a tab of that session.
 */
export interface OidcContext extends OidcClientInfo {
  uid: string;
  cookie: string;
  tabId: string;
  socket: WebSocket;
}

export interface PrepareOptions {
  baseUrl: string;
  componentDomain: string;
  allowedOrigins?: string[];
  callbackHosts?: string[];
  /** Operator API key, for services without openRegistration. */
  apiKey?: string;
  /** An existing account to log in with instead of creating one. */
  userName?: string;
  password?: string;
  /** A registered client: the context then holds a live login of it (`oidc`). */
  oidcClient?: OidcClientInfo;
}

const json = async (response: Response): Promise<any> => response.json().catch(() => undefined);

async function postJson(baseUrl: string, path: string, body: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(baseUrl + path, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  return { status: response.status, body: await json(response) };
}

/** Opens a WebSocket tab with subprotocol `ls`, registers it and returns it with its session cookie. */
export async function openTab(wsUrl: string, cookie?: string): Promise<{ socket: WebSocket; cookie: string; tabId: string }> {
  const socket = new WebSocket(wsUrl, 'ls', cookie ? { headers: { cookie } } : {});
  let sessionCookie = cookie ?? '';
  socket.on('upgrade', (response) => {
    const set = response.headers['set-cookie']?.[0];
    if (set) sessionCookie = set.split(';')[0]!;
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('error', reject);
  });
  socket.on('error', () => {});
  const tabId = randomUUID();
  socket.send(JSON.stringify({ cmd: 'Register', tabId, location: 'http://127.0.0.1/fuzz' }));
  return { socket, cookie: sessionCookie, tabId };
}

/**
 * Asks for a QR code for `tabId` until the service has bound the tab (Register has no answer
 * frame), within a bounded deadline. Returns the code of the answer's signUrl.
 */
export async function requestCode(baseUrl: string, tabId: string, cookie: string, purpose = 'Fuzz context', ms = 5_000): Promise<string> {
  const deadline = Date.now() + ms;
  for (;;) {
    const answer = await postJson(baseUrl, '/QuickLogin', { mode: 'text', purpose, serviceId: '', tab: tabId }, { cookie });
    if (answer.status === 200) return String(answer.body.signUrl).split('/').pop()!;
    if (answer.status !== 404 || Date.now() > deadline) throw new Error(`QR request failed: ${answer.status} ${JSON.stringify(answer.body)}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Logs in as an existing or a new account (open registration or an operator key); undefined when neither works. */
async function account(o: PrepareOptions): Promise<{ userName: string; jwt: string | undefined }> {
  const userName = o.userName ?? `fuzz${randomBytes(4).toString('hex')}`;
  const password = o.password ?? randomBytes(18).toString('base64url');
  if (o.userName === undefined) {
    await postJson(o.baseUrl, '/Agent/Account/Create', { userName, password }, o.apiKey ? { 'x-api-key': o.apiKey } : {});
  }
  const login = await postJson(o.baseUrl, '/Agent/Account/Login', { userName, password, seconds: 3600 });
  return { userName, jwt: login.status === 200 ? (login.body.jwt as string) : undefined };
}

/** A valid identity application of `userName` with a fresh key (docs/agent-api.md "ApplyId"). */
export function validApplication(userName: string): IdentityApplication & { signature: string } {
  const pair = generateEd25519();
  const application: IdentityApplication = { properties: { FIRST: 'Fuzz', LAST: 'Tester' }, publicKey: pair.publicKey };
  return { ...application, signature: signEd25519(privateKeyFromPem(pair.privateKeyPem), applicationMessage(userName, application)) };
}

export async function prepareContext(o: PrepareOptions): Promise<FuzzContext> {
  const url = new URL(o.baseUrl);
  const wsUrl = `${url.protocol === 'https:' ? 'wss' : 'ws'}://${url.host}/ClientEventsWS`;
  const tab = await openTab(wsUrl);
  const code = await requestCode(o.baseUrl, tab.tabId, tab.cookie);
  const { userName, jwt } = await account(o);
  let identityId: string | undefined;
  let application: FuzzContext['application'];
  if (jwt !== undefined) {
    const applied = await postJson(o.baseUrl, '/Agent/Legal/ApplyId', validApplication(userName), { authorization: `Bearer ${jwt}` });
    identityId = applied.status === 201 ? (applied.body.identity.Id as string) : undefined;
    application = validApplication(userName);
  }
  const jwks = await fetch(`${o.baseUrl}/.well-known/jwks.json`).then(json, () => undefined);
  const callbackHosts = o.callbackHosts ?? [];
  let serviceId: string | undefined;
  if (callbackHosts.length > 0) {
    const registered = await postJson(o.baseUrl, '/QuickLogin', { service: `https://${callbackHosts[0]}/callback`, sessionId: 'fuzz-session' });
    serviceId = registered.status === 200 ? (registered.body.serviceId as string) : undefined;
  }
  return {
    host: url.hostname,
    port: Number(url.port || (url.protocol === 'https:' ? 443 : 80)),
    baseUrl: o.baseUrl,
    wsUrl,
    allowedOrigins: o.allowedOrigins ?? [url.origin],
    componentDomain: o.componentDomain,
    userName,
    jwt,
    cookie: tab.cookie,
    tabId: tab.tabId,
    code,
    identityId,
    serviceId,
    application,
    attackerKey: generateKeyPairSync('ed25519').privateKey,
    serviceJwk: (jwks?.keys?.[0] as Record<string, unknown> | undefined) ?? undefined,
    callbackHosts,
    socket: tab.socket,
    oidc: o.oidcClient === undefined ? undefined : await oidcInteraction(o.baseUrl, wsUrl, o.oidcClient),
  };
}

/** The interaction uid from the login page's location (`/oidc/interaction/<uid>`). */
const interactionUid = (location: string): string | undefined => /\/oidc\/interaction\/([A-Za-z0-9_-]+)$/.exec(new URL(location, 'http://x').pathname)?.[1];

/**
 * Starts a login of `client` as a browser does (docs/oidc.md "The login page"): the authorization request
 * (PKCE, the first redirect URI) redirects to the login page, which hands out the session cookie; then a
 * tab of that session is opened, so the page's QR request and completion reach their handlers.
 */
export async function oidcInteraction(baseUrl: string, wsUrl: string, client: OidcClientInfo): Promise<OidcContext> {
  const cookies = new Map<string, string>();
  const take = (response: Response) => {
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const at = pair!.indexOf('=');
      cookies.set(pair!.slice(0, at).trim(), pair!.slice(at + 1).trim());
    }
  };
  const header = () => [...cookies].map(([name, value]) => `${name}=${value}`).join('; ');
  const query = new URLSearchParams({
    client_id: client.clientId,
    response_type: 'code',
    scope: 'openid profile',
    redirect_uri: client.redirectUris[0]!,
    state: randomBytes(8).toString('base64url'),
    nonce: randomBytes(8).toString('base64url'),
    code_challenge: randomBytes(32).toString('base64url'),
    code_challenge_method: 'S256',
  });
  const started = await fetch(`${baseUrl}/oidc/auth?${query}`, { redirect: 'manual' });
  take(started);
  const uid = interactionUid(started.headers.get('location') ?? '');
  if (started.status !== 303 || uid === undefined) throw new Error(`authorization request answered ${started.status} ${started.headers.get('location')}`);
  const page = await fetch(`${baseUrl}/oidc/interaction/${uid}`, { headers: { cookie: header() } });
  take(page);
  if (page.status !== 200) throw new Error(`login page answered ${page.status}`);
  const tab = await openTab(wsUrl, `tabwire_sid=${cookies.get('tabwire_sid') ?? ''}`);
  return { ...client, uid, cookie: header(), tabId: tab.tabId, socket: tab.socket };
}

/** A fresh tab and login code for a context whose tab was taken over or whose code was used (long runs). */
export async function refreshContext(ctx: FuzzContext): Promise<void> {
  ctx.socket?.terminate();
  const tab = await openTab(ctx.wsUrl);
  Object.assign(ctx, { socket: tab.socket, cookie: tab.cookie, tabId: tab.tabId, code: await requestCode(ctx.baseUrl, tab.tabId, tab.cookie) });
  // The login may have been resumed (which ends its interaction) or have expired.
  if (ctx.oidc) {
    ctx.oidc.socket.terminate();
    ctx.oidc = await oidcInteraction(ctx.baseUrl, ctx.wsUrl, ctx.oidc);
  }
}

export function releaseContext(ctx: FuzzContext): void {
  ctx.socket?.terminate();
  ctx.oidc?.socket.terminate();
  ctx.socket = undefined;
}
