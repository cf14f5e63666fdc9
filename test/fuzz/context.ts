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
  };
}

/** A fresh tab and login code for a context whose tab was taken over or whose code was used (long runs). */
export async function refreshContext(ctx: FuzzContext): Promise<void> {
  ctx.socket?.terminate();
  const tab = await openTab(ctx.wsUrl);
  Object.assign(ctx, { socket: tab.socket, cookie: tab.cookie, tabId: tab.tabId, code: await requestCode(ctx.baseUrl, tab.tabId, tab.cookie) });
}

export function releaseContext(ctx: FuzzContext): void {
  ctx.socket?.terminate();
  ctx.socket = undefined;
}
