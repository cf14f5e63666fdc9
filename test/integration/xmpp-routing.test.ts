import { DEADLINE_MS } from '../helpers/until.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import xml from '@xmpp/xml';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium, launchKillableChromium } from '../helpers/browser.js';
import { hashSession } from '../../src/http/session.js';
import { post } from '../helpers/http.js';
import { kill, startProcess } from '../helpers/process.js';
import { startProsody, type ProsodyServer } from '../helpers/prosody.js';
import { freePort, startService, type TestService } from '../helpers/service.js';
import { startXmppClient, type TestXmppClient } from '../helpers/xmpp-client.js';

// tabwire attached to a real private Prosody as an XEP-0114 component; a real XMPP user on the other side.
let prosody: ProsodyServer;
let service: TestService;
let human: TestXmppClient;
let agentJwt: string;

async function until(condition: () => boolean | Promise<boolean>, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

const chat = (to: string, text: string, extra?: xml.Element) => xml('message', { to, type: 'chat', id: `m-${Math.random()}` }, xml('body', {}, text), ...(extra ? [extra] : []));

beforeAll(async () => {
  prosody = await startProsody();
  await prosody.register('human', 'human-password');
  service = await startService({
    xmppService: prosody.componentService,
    xmppComponentDomain: prosody.componentDomain,
    xmppComponentSecret: prosody.componentSecret,
    openRegistration: true,
  });
  await until(() => service.app.tabwire.xmpp!.online, 10_000, 'the component to come online');
  await post(service, '/Agent/Account/Create', { userName: 'agent', password: 'agent password' });
  agentJwt = (await post(service, '/Agent/Account/Login', { userName: 'agent', password: 'agent password', seconds: 3600 })).body.jwt;
  human = await startXmppClient({ service: prosody.c2sService, domain: prosody.domain, username: 'human', password: 'human-password' });
});

afterAll(async () => {
  await human?.stop();
  await service?.close();
  await prosody?.stop();
});

const agentJid = () => `agent@${prosody.componentDomain}`;
const popAll = async () => (await post(service, '/Agent/Xmpp/PopMessages', { maxCount: 100 }, { authorization: `Bearer ${agentJwt}` })).body.messages as { content: string; from: string }[];

describe('XMPP through Prosody', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(async () => browser?.close());

  it('a message from a real XMPP client reaches the handler of a tab in Chromium, and is not stored', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${service.baseUrl}/`);
    await page.waitForFunction(() => (window as any).Events?.stats.transport === 'websocket');
    await page.evaluate(() => (window as any).Events.on('OnChat', (data: unknown) => ((window as any).got = data)));
    const tabId = await page.evaluate(() => (window as any).Events.tabId as string);
    await until(async () => (await service.store.tabs.sessionOf(tabId)) !== undefined, 5_000, 'the tab to register');
    const cookie = (await context.cookies(service.baseUrl)).map((c) => `${c.name}=${c.value}`).join('; ');
    const registered = await post(service, '/Agent/Xmpp/RegisterEventHandler', { tabId, localName: 'x', namespace: 'urn:test:x', function: 'OnChat' }, { authorization: `Bearer ${agentJwt}`, cookie });
    expect(registered.body).toEqual({});

    await human.send(chat(agentJid(), 'hello agent', xml('x', { xmlns: 'urn:test:x', level: '2' }, 'payload')));
    await page.waitForFunction(() => (window as any).got !== undefined, undefined, { timeout: DEADLINE_MS });
    const got = await page.evaluate(() => (window as any).got);
    expect(got.from).toMatch(/^human@xmpp\.test\//);
    expect(got.to).toBe(agentJid());
    expect(got.type).toBe('chat');
    expect(got.element).toEqual({ localName: 'x', namespace: 'urn:test:x', attributes: { level: '2' }, text: 'payload' });
    expect(got.xml).toContain('hello agent');
    expect(await popAll()).toEqual([]);

    // Removed with an empty function: the next such message is stored instead.
    await post(service, '/Agent/Xmpp/RegisterEventHandler', { tabId, localName: 'x', namespace: 'urn:test:x', function: '' }, { authorization: `Bearer ${agentJwt}`, cookie });
    await human.send(chat(agentJid(), 'after removal', xml('x', { xmlns: 'urn:test:x' })));
    let stored: { content: string }[] = [];
    await until(async () => (stored = [...stored, ...(await popAll())]).length > 0, 5_000, 'the stored message');
    expect(stored).toHaveLength(1);
    expect(stored[0]!.content).toContain('after removal');
    expect(await popAll()).toEqual([]);
    await context.close();
  });

  it('dead tab: the browser is killed without Unregister, a matching message arrives, PopMessages returns it', async () => {
    const killable = await launchKillableChromium();
    const context = await killable.browser.newContext();
    const page = await context.newPage();
    await page.goto(`${service.baseUrl}/`);
    await page.waitForFunction(() => (window as any).Events?.stats.transport === 'websocket');
    const tabId = await page.evaluate(() => (window as any).Events.tabId as string);
    await until(async () => (await service.store.tabs.sessionOf(tabId)) !== undefined, 5_000, 'the tab to register');
    const sid = (await context.cookies(service.baseUrl)).find((c) => c.name === 'tabwire_sid')!;
    const registered = await post(service, '/Agent/Xmpp/RegisterEventHandler', { tabId, localName: 'dead', namespace: 'urn:test:dead', function: 'OnDead' }, { authorization: `Bearer ${agentJwt}`, cookie: `${sid.name}=${sid.value}` });
    expect(registered.body).toEqual({});

    await killable.kill();
    const address = { tabId, session: hashSession(sid.value) };
    await until(async () => !(await service.app.tabwire.hub.isConnected(address)), 10_000, 'the service to notice the dead socket');
    await human.send(chat(agentJid(), 'to a dead tab', xml('dead', { xmlns: 'urn:test:dead' })));
    let stored: { content: string }[] = [];
    await until(async () => (stored = [...stored, ...(await popAll())]).length > 0, 5_000, 'the stored message');
    expect(stored).toHaveLength(1);
    expect(stored[0]!.content).toContain('to a dead tab');
  });

  it('an agent sends to the real client\'s JID', async () => {
    const sent = await post(service, '/Agent/Xmpp/SendTextMessage', { to: human.bareJid, message: 'from the agent', subject: 'hi' }, { authorization: `Bearer ${agentJwt}` });
    expect(sent.body.sent).toBe(true);
    const received = await human.nextMessage((m) => m.getChildText('body') === 'from the agent', 5_000);
    expect(received.attrs.from).toBe(agentJid());
    expect(received.attrs.id).toBe(sent.body.id);
    expect(received.getChildText('subject')).toBe('hi');
    const xmlSent = await post(service, '/Agent/Xmpp/SendXmlMessage', { to: human.bareJid, xml: '<note xmlns="urn:test:note" n="7">structured</note>' }, { authorization: `Bearer ${agentJwt}` });
    expect(xmlSent.status).toBe(200);
    const note = await human.nextMessage((m) => m.getChild('note', 'urn:test:note') !== undefined, 5_000);
    expect(note.getChild('note', 'urn:test:note')!.attrs.n).toBe('7');
  });

  it('a message to an unknown agent account is bounced with service-unavailable', async () => {
    await human.send(chat(`nobody@${prosody.componentDomain}`, 'anyone?'));
    const error = await human.nextMessage((m) => m.attrs.type === 'error' && m.attrs.from === `nobody@${prosody.componentDomain}`, 5_000);
    expect(error.getChild('error')!.getChild('service-unavailable')).toBeDefined();
  });

  it('after a Prosody restart the component reconnects and routes again', async () => {
    await human.stop();
    await prosody.restart();
    // Reconnect attempts back off to at most 5 s apart; the deadlines only bound a broken run.
    await until(() => service.app.tabwire.xmpp!.online, 20_000, 'the component to reconnect');
    human = await startXmppClient({ service: prosody.c2sService, domain: prosody.domain, username: 'human', password: 'human-password' });
    await human.send(chat(agentJid(), 'after restart'));
    let stored: { content: string }[] = [];
    await until(async () => (stored = await popAll()).length > 0, 15_000, 'routing after the restart');
    expect(stored[0]!.content).toContain('after restart');
  });
});

describe('durable messages across a SIGKILL of tabwire', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tabwire-xmpp-restart-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('a message with no live handler is popped exactly once, after tabwire was killed and restarted', async () => {
    await service.app.tabwire.xmpp!.stop(); // one component per domain: hand the domain to the process below
    const port = await freePort();
    const baseUrl = `http://127.0.0.1:${port}`;
    const env = {
      TABWIRE_PORT: String(port),
      TABWIRE_SQLITE_FILE: join(dir, 'db.sqlite'),
      TABWIRE_XMPP_SERVICE: prosody.componentService,
      TABWIRE_XMPP_COMPONENT_DOMAIN: prosody.componentDomain,
      TABWIRE_XMPP_COMPONENT_SECRET: prosody.componentSecret,
      TABWIRE_OPEN_REGISTRATION: 'true',
      TABWIRE_LOG_LEVEL: 'warn',
    };
    let child = await startProcess(env, baseUrl);
    const call = (path: string, body: unknown, jwt?: string) =>
      fetch(baseUrl + path, { method: 'POST', headers: { 'content-type': 'application/json', ...(jwt ? { authorization: `Bearer ${jwt}` } : {}) }, body: JSON.stringify(body) });
    await call('/Agent/Account/Create', { userName: 'durable', password: 'durable password' });
    const login = async () => ((await (await call('/Agent/Account/Login', { userName: 'durable', password: 'durable password', seconds: 600 })).json()) as { jwt: string }).jwt;
    let jwt = await login();
    const xmppOnline = async () => ((await (await fetch(`${baseUrl}/readyz`)).json()) as { xmpp: string }).xmpp === 'online';
    await until(xmppOnline, 10_000, 'the process component');
    await human.send(chat(`durable@${prosody.componentDomain}`, 'survive the crash'));
    // Barrier: the component handles stanzas one at a time in stream order, so the bounce of a message sent
    // after it proves the first one was stored (no handler exists for it).
    await human.send(xml('message', { to: `nobody@${prosody.componentDomain}`, type: 'chat', id: 'after-durable' }, xml('body', {}, 'barrier')));
    await human.nextMessage((m) => m.attrs.id === 'after-durable' && m.attrs.type === 'error', 15_000);
    await kill(child);
    child = await startProcess(env, baseUrl);
    jwt = await login();
    const pop = async () => ((await (await call('/Agent/Xmpp/PopMessages', { maxCount: 100 }, jwt)).json()) as { messages: { content: string }[] }).messages;
    const first = await pop();
    expect(first).toHaveLength(1);
    expect(first[0]!.content).toContain('survive the crash');
    expect(await pop()).toEqual([]);
    await kill(child);
  });
});
