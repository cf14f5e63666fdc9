import { randomUUID } from 'node:crypto';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchSignInfo, postDecision } from '../../src/cli/signer.js';
import { hashSession } from '../../src/http/session.js';
import { privateKeyFromPem } from '../../src/identity/keys.js';
import type { EventFrame } from '../../src/protocol/frames.js';
import { post } from '../helpers/http.js';
import { makeIdentity, startService, type TestService } from '../helpers/service.js';
import { TestTab } from '../helpers/tab.js';

/**
 * Regression: a pending login result reached another session. A page registered tab T, asked for a
 * QR code, let T go (Unregister, or idle past tabIdleSeconds); another session registered T and
 * received SignatureReceived with the first person's properties (and AgentApiToken) when they signed.
 */
let service: TestService;
let ada: Awaited<ReturnType<typeof makeIdentity>>;

beforeAll(async () => {
  service = await startService({ longPollHoldSeconds: 30 });
  ada = await makeIdentity(service, { FIRST: 'Ada', PNR: 'victim-secret' });
});
afterAll(async () => service.close());

const sessionOfCookie = (cookie: string) => hashSession(cookie.split('=')[1]!);

/** Waits until the store binds `tabId` to exactly this cookie's session. */
async function boundTo(tabId: string, cookie: string, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  const want = sessionOfCookie(cookie);
  while ((await service.store.tabs.sessionOf(tabId)) !== want) {
    if (Date.now() > deadline) throw new Error(`tab ${tabId} never bound to the expected session`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Waits until the store has no binding for `tabId` any more. */
async function unbound(tabId: string, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while ((await service.store.tabs.sessionOf(tabId)) !== undefined) {
    if (Date.now() > deadline) throw new Error(`tab ${tabId} still bound`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function qrFor(tabId: string, cookie: string): Promise<string> {
  const qr = await post(service, '/QuickLogin', { mode: 'text', purpose: 'Log in', serviceId: '', tab: tabId, agentApiTimeout: 60 }, { cookie });
  expect(qr.status).toBe(200);
  return qr.body.signUrl as string;
}

async function approve(signUrl: string): Promise<void> {
  const info = await fetchSignInfo(signUrl);
  expect((await postDecision(signUrl, info, ada.identity.id, privateKeyFromPem(ada.privateKeyPem), 'approve')).state).toBe('approved');
}

/**
 * A barrier instead of a sleep: a marker addressed to the second session's tab is published after
 * the result was; the bus keeps order, so a leaked result would arrive before the marker.
 */
async function sendMarker(tabId: string, cookie: string): Promise<void> {
  await service.app.tabwire.hub.deliver({ tabId, session: sessionOfCookie(cookie) }, { type: 'Marker', data: null });
}

/** One long-poll as the reference client sends it. */
async function poll(tabId: string, cookie?: string): Promise<{ status: number; body: EventFrame[]; cookie: string | undefined }> {
  const headers: Record<string, string> = { 'content-type': 'text/plain', 'x-tabid': tabId };
  if (cookie) headers.cookie = cookie;
  const response = await fetch(`${service.baseUrl}/ClientEvents`, { method: 'POST', headers, body: 'http://127.0.0.1/page' });
  return { status: response.status, body: (await response.json()) as EventFrame[], cookie: response.headers.get('set-cookie')?.split(';')[0] ?? cookie };
}

async function forgetIdleTabs(): Promise<void> {
  service.clock.advance(service.app.tabwire.config.tabIdleSeconds * 1000);
  service.app.tabwire.hub.sweep();
}

/** The first session registers a tab over WebSocket, asks for a code, and lets the tab go with Unregister. */
async function askThenUnregister(): Promise<{ first: TestTab; signUrl: string }> {
  const first = await TestTab.open(service.wsUrl);
  await boundTo(first.tabId, first.cookie);
  const signUrl = await qrFor(first.tabId, first.cookie);
  first.send({ cmd: 'Unregister' });
  await unbound(first.tabId);
  return { first, signUrl };
}

/** Another session registers the same tab id over WebSocket. */
async function takeOver(tabId: string): Promise<TestTab> {
  const second = await TestTab.open(service.wsUrl, { tabId });
  await boundTo(tabId, second.cookie);
  return second;
}

/** Signs the code, then proves with a marker (no sleep) that the second session got nothing before it. */
async function approveAndExpectNothingFor(second: TestTab, signUrl: string): Promise<void> {
  await approve(signUrl);
  await sendMarker(second.tabId, second.cookie);
  await second.next('Marker');
  expect(second.events.map((e) => e.type)).toEqual(['Marker']);
}

describe('a pending result never reaches another session', () => {
  it('WebSocket, Unregister: the session that takes the tab id gets nothing; the first gets its result when it registers again', async () => {
    const { first, signUrl } = await askThenUnregister();
    const second = await takeOver(first.tabId);
    expect(second.cookie).not.toBe(first.cookie);
    await approveAndExpectNothingFor(second, signUrl);

    // The second session lets the tab go; the first registers it again on its open socket.
    second.send({ cmd: 'Unregister' });
    await unbound(first.tabId);
    first.send({ cmd: 'Register', tabId: first.tabId, location: 'http://127.0.0.1/page' });
    const result = await first.next('SignatureReceived');
    expect((result.data as { Properties: Record<string, string> }).Properties.PNR).toBe('victim-secret');
    expect(second.events.map((e) => e.type)).toEqual(['Marker']);
    first.close();
    second.close();
  });

  it('WebSocket, idle expiry: a tab forgotten for idleness and taken by another session leaks nothing', async () => {
    const first = await TestTab.open(service.wsUrl);
    await boundTo(first.tabId, first.cookie);
    const signUrl = await qrFor(first.tabId, first.cookie);
    first.close();
    await first.closed();
    await forgetIdleTabs();
    await unbound(first.tabId);

    const second = await takeOver(first.tabId);
    await approveAndExpectNothingFor(second, signUrl);

    second.send({ cmd: 'Unregister' });
    await unbound(first.tabId);
    // The first session comes back within the bounds (its result waits for it, not for the tab id).
    const back = await TestTab.open(service.wsUrl, { tabId: first.tabId, cookie: first.cookie });
    expect((await back.next('SignatureReceived')).type).toBe('SignatureReceived');
    back.close();
    second.close();
  });

  it('long-poll, idle expiry: the second session polls the same tab id and gets nothing; the first gets its result on its next poll', async () => {
    const tabId = randomUUID();
    const first = await poll(tabId);
    expect(first.status).toBe(200);
    const signUrl = await qrFor(tabId, first.cookie!);
    await forgetIdleTabs();
    await unbound(tabId);

    const second = await poll(tabId);
    expect(second.status).toBe(200);
    expect(second.cookie).not.toBe(first.cookie);
    await approve(signUrl);
    await sendMarker(tabId, second.cookie!);
    const answer = await poll(tabId, second.cookie);
    expect(answer.body.map((e) => e.type)).toEqual(['Marker']);
  });

  it('long-poll, idle expiry: the first session polling again within the bounds receives its result', async () => {
    const tabId = randomUUID();
    const first = await poll(tabId);
    const signUrl = await qrFor(tabId, first.cookie!);
    await forgetIdleTabs();
    await unbound(tabId);
    await approve(signUrl);
    // The first poll of a tab new to the node again is answered [] at once (docs/events.md "Long-poll": a
    // reference page may reload on it); the next one carries the result.
    const again = await poll(tabId, first.cookie);
    expect([again.status, again.body]).toEqual([200, []]);
    const answer = await poll(tabId, first.cookie);
    expect(answer.status).toBe(200);
    expect(answer.body.map((e) => e.type)).toEqual(['SignatureReceived']);
  });

  it('WebSocket Unregister, then another session over long-poll: it gets nothing', async () => {
    const { first, signUrl } = await askThenUnregister();
    const second = await poll(first.tabId);
    expect(second.status).toBe(200);
    await approve(signUrl);
    await sendMarker(first.tabId, second.cookie!);
    expect((await poll(first.tabId, second.cookie)).body.map((e) => e.type)).toEqual(['Marker']);
    first.close();
  });

  it('a rejection is addressed the same way: SignatureRejected reaches only the session that asked', async () => {
    const { first, signUrl } = await askThenUnregister();
    const second = await takeOver(first.tabId);
    const info = await fetchSignInfo(signUrl);
    await postDecision(signUrl, info, ada.identity.id, privateKeyFromPem(ada.privateKeyPem), 'reject');
    await sendMarker(second.tabId, second.cookie);
    await second.next('Marker');
    expect(second.events.map((e) => e.type)).toEqual(['Marker']);
    first.close();
    second.close();
  });
});

describe('a tab id that was released inherits nothing', () => {
  it('a code issued to the first session cannot be used by the second for attachments or as its own', async () => {
    const { first } = await askThenUnregister();
    const second = await takeOver(first.tabId);
    // The second session's own QR request works and is its own; the first one's cookie is refused now.
    expect((await post(service, '/QuickLogin', { mode: 'text', purpose: 'x', serviceId: '', tab: first.tabId }, { cookie: second.cookie })).status).toBe(200);
    const stale = await post(service, '/QuickLogin', { mode: 'text', purpose: 'x', serviceId: '', tab: first.tabId }, { cookie: first.cookie });
    expect([stale.status, stale.body.code]).toEqual([403, 'tab_session_mismatch']);
    first.close();
    second.close();
  });
});

/** Holds every tab binding in the store until the returned function is called (a Register "in the store"). */
function holdBinds(): () => void {
  const tabs = service.store.tabs;
  const original = tabs.bind.bind(tabs);
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  tabs.bind = async (...args) => {
    await gate;
    return original(...args);
  };
  return () => {
    tabs.bind = original;
    release();
  };
}

async function until(condition: () => boolean | Promise<boolean>, what: string, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('registration races', () => {
  it('a WebSocket that closes while its Register is processed leaves no tab with a dead connection', async () => {
    const earlier = new Set(service.app.websocketServer.clients);
    const tab = await TestTab.open(service.wsUrl, { register: false });
    const serverSide = [...service.app.websocketServer.clients].find((c) => !earlier.has(c))!;
    const release = holdBinds();
    tab.send({ cmd: 'Register', tabId: tab.tabId, location: 'http://127.0.0.1/page' });
    tab.ws.terminate();
    // The service has seen the close while the Register still waits in the store.
    await until(() => serverSide.readyState === serverSide.CLOSED, 'the server to see the close');
    release();
    await boundTo(tab.tabId, tab.cookie);
    const address = { tabId: tab.tabId, session: sessionOfCookie(tab.cookie) };
    await until(() => service.app.tabwire.hub.holds(address), 'the tab to be held');
    expect(await service.app.tabwire.hub.isConnected(address)).toBe(false);
    // So an XMPP-style event with a fallback is stored at once instead of going into a dead socket.
  });

  it('a long-poll abandoned while its Register is processed leaves no tab with a dead connection', async () => {
    const tabId = randomUUID();
    const { cookie } = await poll(tabId);
    const address = { tabId, session: sessionOfCookie(cookie!) };
    const connections = () => new Promise<number>((resolve, reject) => service.app.server.getConnections((err, n) => (err ? reject(err) : resolve(n))));
    const before = await connections();
    const connectedBefore = service.app.tabwire.hub.snapshot().connected;
    const release = holdBinds();
    // A raw socket, so the client really goes away (fetch's abort may keep the connection open).
    const socket = connect(Number(new URL(service.baseUrl).port), '127.0.0.1');
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    const body = 'http://127.0.0.1/page';
    socket.write(`POST /ClientEvents HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\nX-TabID: ${tabId}\r\nCookie: ${cookie}\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
    await until(async () => (await connections()) > before, 'the poll to arrive');
    socket.destroy();
    await until(async () => (await connections()) <= before, 'the service to see the client go');
    release();
    await until(() => service.app.tabwire.hub.holds(address), 'the tab to be held');
    expect(service.app.tabwire.hub.snapshot().connected).toBeLessThanOrEqual(connectedBefore);
    // An event for the tab now waits in its buffer for the next poll instead of vanishing into a dead poll.
    await service.app.tabwire.hub.deliver(address, { type: 'Waiting', data: 1 });
    expect((await poll(tabId, cookie)).body.map((e) => e.type)).toEqual(['Waiting']);
  });

});
