import { randomBytes, randomUUID } from 'node:crypto';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { createApiKey } from '../../src/agent/api-keys.js';
import { applicationMessage, type IdentityApplication } from '../../src/identity/application.js';
import { generateEd25519, privateKeyFromPem, signEd25519 } from '../../src/identity/keys.js';
import type { QuickLoginResult } from '../../src/protocol/events.js';
import { signedMessage } from '../../src/quicklogin/challenge.js';
import { operationsOf, wire, type OpenApiChecker, type WireAnswer } from '../helpers/openapi-check.js';
import { startDocumentedService } from '../helpers/openapi-service.js';
import { registered } from '../helpers/http.js';
import { makeIdentity, type TestService } from '../helpers/service.js';
import { TestTab } from '../helpers/tab.js';
import { addClient, approve, authorize, CookieJar, interactionUid, pkce } from '../helpers/oidc-flow.js';

/**
 * Real answers of every documented operation of the OpenAPI document (docs/openapi.md), successes and
 * refusals, match it (status, media type, body), so the document cannot drift from what the service
 * answers. The document itself: openapi-document.test.ts.
 */

let service: TestService;
let doc: Record<string, any>;
let checker: OpenApiChecker;
let apiKey: string;

/** Requests `path`, checks the answer against the document for `template`, and returns it. */
async function call(method: string, template: string, path: string, init: { body?: unknown; headers?: Record<string, string>; redirect?: RequestRedirect } = {}) {
  const headers: Record<string, string> = { ...init.headers };
  let body: string | undefined;
  if (init.body !== undefined) {
    body = typeof init.body === 'string' ? init.body : JSON.stringify(init.body);
    headers['content-type'] ??= 'application/json';
  }
  const answer = await wire(await fetch(service.baseUrl + path, { method, headers, redirect: init.redirect ?? 'follow', ...(body === undefined ? {} : { body }) }));
  checker.check(method, template, answer);
  return answer as WireAnswer & { body: any; headers: Headers };
}

const auth = (jwt: string) => ({ authorization: `Bearer ${jwt}` });

async function openTab(): Promise<TestTab> {
  const tab = await TestTab.open(service.wsUrl);
  await registered(service, tab.tabId);
  return tab;
}

async function account(userName: string): Promise<string> {
  await call('POST', '/Agent/Account/Create', '/Agent/Account/Create', {
    body: { userName, password: 'correct horse battery' },
    headers: { 'x-api-key': apiKey },
  });
  return (await call('POST', '/Agent/Account/Login', '/Agent/Account/Login', { body: { userName, password: 'correct horse battery', seconds: 600 } })).body.jwt;
}

/** A QR code in text mode for the tab; returns the code. */
async function codeFor(tab: TestTab): Promise<string> {
  const qr = await call('POST', '/QuickLogin', '/QuickLogin', { body: { mode: 'text', purpose: 'OpenAPI', serviceId: '', tab: tab.tabId }, headers: { cookie: tab.cookie } });
  expect(qr.status).toBe(200);
  return new URL(qr.body.signUrl as string).pathname.split('/').at(-1)!;
}

beforeAll(async () => {
  ({ service, doc, checker } = await startDocumentedService());
  apiKey = (await createApiKey(service.store.apiKeys, service.clock, null)).key;
});
afterAll(async () => service?.close());

describe('real answers match the document', () => {
  it('operations, pages and keys', async () => {
    for (const path of ['/healthz', '/readyz', '/metrics', '/', '/demo.js', '/sign.js', '/style.css', '/favicon.png', '/favicon.ico', '/QuickLogin/DevIdentity', '/.well-known/jwks.json', '/.well-known/tabwire/result-keys', '/.well-known/tabwire/webhook-key']) {
      expect((await call('GET', path, path)).status, path).toBe(200);
    }
    // The web wallet (docs/wallet.md): its page and every file of its shell.
    for (const file of ['wallet.js', 'jsqr.js', 'sw.js', 'wallet.css', 'manifest.webmanifest', 'icon-192.png', 'icon-512.png']) {
      expect((await call('GET', `/wallet/${file}`, `/wallet/${file}`)).status, file).toBe(200);
    }
    // The page itself is left out of the document (a trailing-slash path, docs/openapi.md "Lint").
    expect((await fetch(`${service.baseUrl}/wallet/`)).status).toBe(200);
    expect((await call('GET', '/wallet', '/wallet', { redirect: 'manual' })).status).toBe(301);
    const script = await call('GET', '/Events.js', '/Events.js');
    expect(script.status).toBe(200);
    expect((await call('GET', '/Events.js', '/Events.js', { headers: { 'if-none-match': script.headers.get('etag')! } })).status).toBe(304);
  });

  it('the WebSocket channel: 101 with events that match their schemas, 426 for a plain GET, 400 without the subprotocol', async () => {
    const socket = new WebSocket(service.wsUrl, 'ls');
    const upgraded = await new Promise<IncomingMessage>((resolve, reject) => {
      socket.once('upgrade', resolve);
      socket.once('error', reject);
    });
    checker.check('GET', '/ClientEventsWS', { status: upgraded.statusCode ?? 0, contentType: upgraded.headers['content-type'] ?? '', body: undefined });
    expect(upgraded.headers['set-cookie']?.[0]).toMatch(/^tabwire_sid=/);
    socket.close();
    const tab = await openTab();
    const greeting = await tab.next('CheckServerInstance');
    expect(checker.validates('/components/schemas/EventFrame', greeting)).toBeUndefined();
    expect(checker.validates('/x-tabwire-channel/events/CheckServerInstance', greeting.data)).toBeUndefined();
    tab.close();

    expect((await call('GET', '/ClientEventsWS', '/ClientEventsWS')).body.code).toBe('websocket_required');
    const refused = await new Promise<WireAnswer>((resolve, reject) => {
      const req = httpRequest(`${service.baseUrl}/ClientEventsWS`, {
        headers: { connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-version': '13', 'sec-websocket-key': randomBytes(16).toString('base64') },
      });
      req.on('response', (res) => {
        let text = '';
        res.on('data', (chunk: Buffer) => (text += chunk.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, contentType: res.headers['content-type'] ?? '', body: JSON.parse(text) }));
      });
      req.on('upgrade', () => reject(new Error('upgraded without the subprotocol')));
      req.on('error', reject);
      req.end();
    });
    checker.check('GET', '/ClientEventsWS', refused);
    expect([refused.status, (refused.body as { code: string }).code]).toEqual([400, 'subprotocol_required']);
  });

  it('the long-poll channel: events, NOP, and a missing X-TabID', async () => {
    const tabId = randomUUID();
    const first = await call('POST', '/ClientEvents', '/ClientEvents', { body: 'http://127.0.0.1/page', headers: { 'content-type': 'text/plain', 'x-tabid': tabId } });
    expect(first.body[0].type).toBe('CheckServerInstance');
    const cookie = first.headers.get('set-cookie')!.split(';')[0]!;
    const idle = await call('POST', '/ClientEvents', '/ClientEvents', { body: 'http://127.0.0.1/page', headers: { 'content-type': 'text/plain', 'x-tabid': tabId, cookie } });
    expect(idle.body).toEqual([{ type: 'NOP' }]);
    const missing = await call('POST', '/ClientEvents', '/ClientEvents', { body: 'x', headers: { 'content-type': 'text/plain' } });
    expect(missing.body.code).toBe('tab_id_missing');
  });

  it('QuickLogin: the three modes, a backend registration, the image, sign info, signing and refusals', async () => {
    const tab = await openTab();
    const headers = { cookie: tab.cookie };
    for (const mode of ['image', 'base64', 'text']) {
      const qr = await call('POST', '/QuickLogin', '/QuickLogin', { body: { mode, purpose: 'OpenAPI', serviceId: '', tab: tab.tabId }, headers });
      expect(qr.status, mode).toBe(200);
      if (mode === 'image') {
        const src = new URL(qr.body.src as string);
        const file = src.pathname.split('/').at(-1)!;
        expect((await call('GET', '/QuickLogin/Qr/{file}', `/QuickLogin/Qr/${file}?fg=Theme`)).status).toBe(200);
      }
    }
    expect((await call('GET', '/QuickLogin/Qr/{file}', '/QuickLogin/Qr/AAAAAAAA.png')).status).toBe(404);
    expect((await call('GET', '/QuickLogin/Qr/{file}', '/QuickLogin/Qr/nope.gif')).status).toBe(400);
    const registration = await call('POST', '/QuickLogin', '/QuickLogin', { body: { service: 'https://127.0.0.1:9/callback', sessionId: 'openapi' } });
    expect(Object.keys(registration.body)).toEqual(['serviceId']);
    expect((await call('POST', '/QuickLogin', '/QuickLogin', { body: { mode: 'text', service: 'x' } })).body.code).toBe('request_kind_ambiguous');
    expect((await call('POST', '/QuickLogin', '/QuickLogin', { body: { mode: 'text', purpose: 'p', serviceId: '', tab: 'no-cookie-tab' } })).body.code).toBe('session_missing');

    // Sign info as JSON and as the page; signing with an approved identity; a reused code.
    const code = await codeFor(tab);
    expect((await call('GET', '/QuickLogin/Sign/{code}', `/QuickLogin/Sign/${code}`)).body.code).toBe(code);
    expect((await call('GET', '/QuickLogin/Sign/{code}', `/QuickLogin/Sign/${code}`, { headers: { accept: 'text/html' } })).contentType).toMatch(/^text\/html/);
    const { identity, privateKeyPem } = await makeIdentity(service, { FIRST: 'Ada' });
    const challenge = (await call('GET', '/QuickLogin/Sign/{code}', `/QuickLogin/Sign/${code}`)).body.challenge as string;
    const badSignature = signEd25519(privateKeyFromPem(generateEd25519().privateKeyPem), signedMessage(challenge, identity.id, 'approve'));
    expect((await call('POST', '/QuickLogin/Sign/{code}', `/QuickLogin/Sign/${code}`, { body: { legalId: identity.id, signature: badSignature, decision: 'approve' } })).body.code).toBe('signature_invalid');
    const signature = signEd25519(privateKeyFromPem(privateKeyPem), signedMessage(challenge, identity.id, 'approve'));
    expect((await call('POST', '/QuickLogin/Sign/{code}', `/QuickLogin/Sign/${code}`, { body: { legalId: identity.id, signature, decision: 'approve' } })).body).toEqual({ state: 'approved' });
    const result = await tab.next('SignatureReceived');
    expect(checker.validates('/x-tabwire-channel/events/SignatureReceived', result.data)).toBeUndefined();
    expect((await call('GET', '/QuickLogin/Sign/{code}', `/QuickLogin/Sign/${code}`)).body.code).toBe('code_already_used');
    expect((await call('GET', '/QuickLogin/Sign/{code}', '/QuickLogin/Sign/no-such-code')).body.code).toBe('code_not_found');

    // The development identity (on by default on a loopback deployment); a rejection reaches the tab.
    const devCode = await codeFor(tab);
    expect((await call('POST', '/QuickLogin/Sign/{code}/Dev', `/QuickLogin/Sign/${devCode}/Dev`, { body: { decision: 'reject' } })).body).toEqual({ state: 'rejected' });
    const rejected = await tab.next('SignatureRejected');
    expect(checker.validates('/x-tabwire-channel/events/SignatureRejected', rejected.data)).toBeUndefined();
    expect((await call('POST', '/QuickLogin/Sign/{code}/Dev', `/QuickLogin/Sign/${devCode}/Dev`, { body: { decision: 'approve' } })).status).toBe(409);
    expect((await call('POST', '/QuickLogin/Sign/{code}/Dev', `/QuickLogin/Sign/${devCode}/Dev`, { body: { decision: 'maybe' } })).status).toBe(400);
    tab.close();
  });

  it('QuickLogin scan-limited codes: binding on first fetch, 409 code_bound, 410 code_too_old, 403 binding_required', async () => {
    const tab = await openTab();
    const headers = { cookie: tab.cookie };
    const issue = async () => {
      const qr = await call('POST', '/QuickLogin', '/QuickLogin', { body: { mode: 'text', purpose: 'OpenAPI', serviceId: '', tab: tab.tabId, scanSeconds: 1 }, headers });
      expect(qr.status).toBe(200);
      return new URL(qr.body.signUrl as string).pathname;
    };
    const path = await issue();
    const late = await issue();
    const first = await call('GET', '/QuickLogin/Sign/{code}', path);
    expect(typeof first.body.binding).toBe('string');
    const binding = { 'tabwire-binding': first.body.binding as string };
    expect((await call('GET', '/QuickLogin/Sign/{code}', path)).body.code).toBe('code_bound');
    expect((await call('GET', '/QuickLogin/Sign/{code}', path, { headers: binding })).status).toBe(200);
    const { identity, privateKeyPem } = await makeIdentity(service, { FIRST: 'Ada' });
    const signature = signEd25519(privateKeyFromPem(privateKeyPem), signedMessage(first.body.challenge as string, identity.id, 'approve'));
    const body = { legalId: identity.id, signature, decision: 'approve' };
    expect((await call('POST', '/QuickLogin/Sign/{code}', path, { body })).body.code).toBe('binding_required');
    expect((await call('POST', '/QuickLogin/Sign/{code}/Dev', `${path}/Dev`, { body: { decision: 'approve' } })).body.code).toBe('binding_required');
    expect((await call('POST', '/QuickLogin/Sign/{code}', path, { body, headers: binding })).body).toEqual({ state: 'approved' });
    await tab.next('SignatureReceived');
    service.clock.advance(2000);
    expect((await call('GET', '/QuickLogin/Sign/{code}', late)).body.code).toBe('code_too_old');
    expect((await call('GET', '/QuickLogin/Sign/{code}', path, { headers: { 'tabwire-binding': 'not a token' } })).status).toBe(400);
    tab.close();
  });

  it('the Agent API: accounts, tokens, identities, attachments, XMPP, with their refusals', async () => {
    const jwt = await account('ada');
    expect((await call('POST', '/Agent/Account/Create', '/Agent/Account/Create', { body: { userName: 'eve', password: 'correct horse battery' } })).body.code).toBe('api_key_missing');
    expect((await call('POST', '/Agent/Account/Login', '/Agent/Account/Login', { body: { userName: 'ada', password: 'wrong password', seconds: 60 } })).status).toBe(401);
    expect((await call('POST', '/Agent/Account/Refresh', '/Agent/Account/Refresh', { body: { seconds: 60 }, headers: auth(jwt) })).status).toBe(200);
    expect((await call('POST', '/Agent/Account/Refresh', '/Agent/Account/Refresh', { body: { seconds: 60 } })).body.code).toBe('token_missing');
    expect((await call('GET', '/Agent/Account/Info', '/Agent/Account/Info', { headers: auth(jwt) })).body.userName).toBe('ada');
    expect((await call('GET', '/Agent/Account/Info', '/Agent/Account/Info', { headers: { authorization: 'Bearer nope' } })).body.code).toBe('token_malformed');

    // An identity with an attachment; two so that ListIdentities has a next page.
    const pair = generateEd25519();
    const png = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex').toString('base64');
    const application: IdentityApplication = { properties: { FIRST: 'Ada' }, publicKey: pair.publicKey, attachments: [{ fileName: 'p.png', contentType: 'image/png', content: png }] };
    const applySignature = signEd25519(privateKeyFromPem(pair.privateKeyPem), applicationMessage('ada', application));
    const applied = await call('POST', '/Agent/Legal/ApplyId', '/Agent/Legal/ApplyId', { body: { ...application, signature: applySignature }, headers: auth(jwt) });
    expect(applied.status).toBe(201);
    const id = applied.body.identity.Id as string;
    expect((await call('POST', '/Agent/Legal/ApplyId', '/Agent/Legal/ApplyId', { body: { properties: {} }, headers: auth(jwt) })).status).toBe(400);
    const second = generateEd25519();
    const plain: IdentityApplication = { properties: { FIRST: 'Ada' }, publicKey: second.publicKey };
    await call('POST', '/Agent/Legal/ApplyId', '/Agent/Legal/ApplyId', { body: { ...plain, signature: signEd25519(privateKeyFromPem(second.privateKeyPem), applicationMessage('ada', plain)) }, headers: auth(jwt) });
    expect((await call('GET', '/Agent/Legal/GetIdentity', `/Agent/Legal/GetIdentity?id=${encodeURIComponent(id)}`, { headers: auth(jwt) })).body.identity.Id).toBe(id);
    expect((await call('GET', '/Agent/Legal/GetIdentity', '/Agent/Legal/GetIdentity?id=nobody', { headers: auth(jwt) })).body.code).toBe('identity_not_found');
    const page = await call('GET', '/Agent/Legal/ListIdentities', '/Agent/Legal/ListIdentities?limit=1', { headers: auth(jwt) });
    expect(page.body.next).toEqual(expect.any(String));
    expect((await call('GET', '/Agent/Legal/ListIdentities', '/Agent/Legal/ListIdentities?after=bogus', { headers: auth(jwt) })).status).toBe(400);

    // The attachment of a fresh result, for the page that asked.
    await service.store.identities.transition(id, 'Created', 'Approved', service.clock.now());
    const tab = await openTab();
    const code = await codeFor(tab);
    const challenge = (await call('GET', '/QuickLogin/Sign/{code}', `/QuickLogin/Sign/${code}`)).body.challenge as string;
    const signature = signEd25519(privateKeyFromPem(pair.privateKeyPem), signedMessage(challenge, id, 'approve'));
    await call('POST', '/QuickLogin/Sign/{code}', `/QuickLogin/Sign/${code}`, { body: { legalId: id, signature, decision: 'approve' } });
    const result = (await tab.next('SignatureReceived')).data as QuickLoginResult;
    const url = new URL(result.Attachments[0]!.Url);
    expect((await call('GET', '/QuickLogin/Attachment/{code}/{id}', url.pathname, { headers: { cookie: tab.cookie } })).contentType).toBe('image/png');
    expect((await call('GET', '/QuickLogin/Attachment/{code}/{id}', url.pathname)).status).toBe(404);

    // XMPP: an event handler on the tab, a local message stored and popped, refusals.
    const handler = { tabId: tab.tabId, localName: 'x', namespace: 'urn:test', function: 'OnMessage' };
    expect((await call('POST', '/Agent/Xmpp/RegisterEventHandler', '/Agent/Xmpp/RegisterEventHandler', { body: handler, headers: { ...auth(jwt), cookie: tab.cookie } })).body).toEqual({});
    expect((await call('POST', '/Agent/Xmpp/RegisterEventHandler', '/Agent/Xmpp/RegisterEventHandler', { body: handler, headers: auth(jwt) })).status).toBe(403);
    const bob = await account('bob');
    const domain = service.app.tabwire.config.xmppComponentDomain;
    expect((await call('POST', '/Agent/Xmpp/SendTextMessage', '/Agent/Xmpp/SendTextMessage', { body: { to: `bob@${domain}`, message: 'hello', subject: 'hi' }, headers: auth(jwt) })).body.sent).toBe(true);
    expect((await call('POST', '/Agent/Xmpp/SendXmlMessage', '/Agent/Xmpp/SendXmlMessage', { body: { to: `ada@${domain}`, xml: '<x xmlns="urn:test"/>' }, headers: auth(bob) })).body.sent).toBe(true);
    const routed = await tab.next('OnMessage');
    expect(checker.validates('/x-tabwire-channel/events/<function>', routed.data)).toBeUndefined();
    expect((await call('POST', '/Agent/Xmpp/SendXmlMessage', '/Agent/Xmpp/SendXmlMessage', { body: { to: `ada@${domain}`, xml: '<x' }, headers: auth(bob) })).body.code).toBe('xml_invalid');
    expect((await call('POST', '/Agent/Xmpp/SendTextMessage', '/Agent/Xmpp/SendTextMessage', { body: { to: `nobody@${domain}`, message: 'hello' }, headers: auth(jwt) })).body.code).toBe('recipient_unknown');
    expect((await call('POST', '/Agent/Xmpp/PopMessages', '/Agent/Xmpp/PopMessages', { body: { maxCount: 10 }, headers: auth(bob) })).body.messages).toHaveLength(1);
    expect((await call('POST', '/Agent/Xmpp/PopMessages', '/Agent/Xmpp/PopMessages', { body: { maxCount: 0 }, headers: auth(bob) })).status).toBe(400);
    tab.close();
  });

  it('the OpenID Provider\'s login page: the page, its view, a QR request on the relying party\'s behalf, and the completion', async () => {
    const client = await addClient(service.store, { redirectUris: ['https://shop.example/cb'], name: 'The Shop' });
    const jar = new CookieJar();
    const started = await authorize(service.baseUrl, jar, { client, challenge: pkce().challenge });
    const uid = interactionUid(started.headers.get('location')!);
    const cookie = { cookie: jar.header() };
    await call('GET', '/oidc-login.js', '/oidc-login.js');
    const page = await call('GET', '/oidc/interaction/{uid}', `/oidc/interaction/${uid}`, { headers: cookie });
    expect(page.status).toBe(200);
    jar.take(page);
    const view = await call('GET', '/oidc/interaction/{uid}/view', `/oidc/interaction/${uid}/view`, { headers: { cookie: jar.header() } });
    expect(view.body).toMatchObject({ clientName: 'The Shop', site: 'https://shop.example' });
    // Without the interaction's cookie: another browser's login.
    expect((await call('GET', '/oidc/interaction/{uid}/view', `/oidc/interaction/${uid}/view`)).status).toBe(404);
    const session = jar.get('tabwire_sid')!;
    const tab = await TestTab.open(service.wsUrl, { cookie: `tabwire_sid=${session}` });
    try {
      await registered(service, tab.tabId);
      const headers = { cookie: jar.header(), origin: service.publicBaseUrl };
      const qr = await call('POST', '/oidc/interaction/{uid}/QuickLogin', `/oidc/interaction/${uid}/QuickLogin`, { body: { mode: 'text', purpose: 'x', serviceId: '', tab: tab.tabId }, headers });
      expect(qr.status).toBe(200);
      expect((await call('POST', '/oidc/interaction/{uid}/QuickLogin', `/oidc/interaction/${uid}/QuickLogin`, { body: { mode: 'nope' }, headers })).status).toBe(400);
      expect((await call('POST', '/oidc/interaction/{uid}/complete', `/oidc/interaction/${uid}/complete`, { body: { tab: tab.tabId }, headers })).status).toBe(404);
      const identity = await makeIdentity(service, { FIRST: 'Ada' });
      await approve(qr.body.signUrl as string, identity.identity.id, privateKeyFromPem(identity.privateKeyPem));
      await tab.next('SignatureReceived');
      const done = await call('POST', '/oidc/interaction/{uid}/complete', `/oidc/interaction/${uid}/complete`, { body: { tab: tab.tabId }, headers });
      expect({ status: done.status, body: done.body }).toMatchObject({ status: 200, body: { redirectTo: expect.stringContaining(`/oidc/auth/${uid}`) } });
    } finally {
      tab.ws.close();
    }
  });

  it('every documented operation was exercised, with a success', () => {
    const unexercised = operationsOf(doc).filter((op) => ![...(checker.seen.get(op) ?? [])].some((s) => /^[123]/.test(s)));
    expect(unexercised).toEqual([]);
  });
});
