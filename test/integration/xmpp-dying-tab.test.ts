import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createInterface } from 'node:readline';
import xml from '@xmpp/xml';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { hashSession } from '../../src/http/session.js';
import type { TabAddress } from '../../src/protocol/address.js';
import { launchSignallableChromium } from '../helpers/browser.js';
import { post } from '../helpers/http.js';
import { startProsody, type ProsodyServer } from '../helpers/prosody.js';
import { startService, type TestService } from '../helpers/service.js';
import { until, DEADLINE_MS } from '../helpers/until.js';
import { startXmppClient, type TestXmppClient } from '../helpers/xmpp-client.js';

/**
 * An XMPP message counts as delivered to a tab only once the tab confirms it (docs/xmpp.md "Delivered means
 * confirmed"). A real Prosody and a real XMPP user send; the tab is a WebSocket client in a process of its
 * own, or a whole Chromium, that the test freezes (SIGSTOP) so the message is certainly written into its
 * socket and certainly not confirmed, and then kills (SIGKILL) or leaves frozen past the deadline. The
 * service runs on a clock the test moves, so the deadline passes when the test says, never by itself.
 */
let prosody: ProsodyServer;
let service: TestService;
let human: TestXmppClient;
let agentJwt: string;
const cleanups: (() => Promise<void>)[] = [];

const CONFIRM_MS = 10_000; // messageConfirmSeconds' default
const NS = 'urn:test:dying';

beforeAll(async () => {
  prosody = await startProsody();
  await prosody.register('human', 'human-password');
  service = await startService({
    xmppService: prosody.componentService,
    xmppComponentDomain: prosody.componentDomain,
    xmppComponentSecret: prosody.componentSecret,
    openRegistration: true,
  });
  await until(() => service.app.tabwire.xmpp!.online, 'the component to come online');
  await post(service, '/Agent/Account/Create', { userName: 'agent', password: 'agent password' });
  agentJwt = (await post(service, '/Agent/Account/Login', { userName: 'agent', password: 'agent password', seconds: 3600 })).body.jwt;
  human = await startXmppClient({ service: prosody.c2sService, domain: prosody.domain, username: 'human', password: 'human-password' });
});

afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

afterAll(async () => {
  await human?.stop();
  await service?.close();
  await prosody?.stop();
});

const hub = () => service.app.tabwire.hub;
const pop = async () => (await post(service, '/Agent/Xmpp/PopMessages', { maxCount: 100 }, { authorization: `Bearer ${agentJwt}` })).body.messages as { content: string }[];
/** A counter of the service's /metrics (its value summed over labels). */
async function counter(name: string): Promise<number> {
  const text = await (await fetch(`${service.baseUrl}/metrics`)).text();
  return text.split('\n').filter((line) => line.startsWith(`${name} `) || line.startsWith(`${name}{`)).reduce((sum, line) => sum + Number(line.split(' ').at(-1)), 0);
}

/** Pops until `n` messages came, then once more: PopMessages must have held exactly those. */
async function popExactly(n: number): Promise<{ content: string }[]> {
  const got: { content: string }[] = [];
  await until(async () => (got.push(...(await pop())), got.length >= n), `${n} stored message(s)`);
  expect(await pop()).toEqual([]);
  return got;
}

/** Sends a message matching the tabs' handler through Prosody, with a text to tell it apart. */
async function sendToAgent(text: string): Promise<void> {
  await human.send(xml('message', { to: `agent@${prosody.componentDomain}`, type: 'chat', id: `m-${randomUUID()}` }, xml('body', {}, text), xml('dying', { xmlns: NS })));
}

async function registerHandler(tabId: string, cookie: string): Promise<void> {
  const answer = await post(service, '/Agent/Xmpp/RegisterEventHandler', { tabId, namespace: NS, function: 'OnDying' }, { authorization: `Bearer ${agentJwt}`, cookie });
  expect(answer.body).toEqual({});
}

/** The deadline passes: an unconfirmed write is declared dead now. */
function passDeadline(): void {
  service.clock.advance(CONFIRM_MS);
  hub().checkConfirmations();
}

interface ChildTab {
  child: ChildProcess;
  address: TabAddress;
  /** Events it received (OnDying frames), as the tab's script would see them. */
  received(): { type: string; data: { xml: string } }[];
  exited: Promise<void>;
}

/** A tab whose "browser" is a child process running a WebSocket client, registered with a handler. */
async function childTab(): Promise<ChildTab> {
  const tabId = randomUUID();
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/fixtures/ws-tab-client.ts', service.wsUrl, tabId], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  cleanups.push(async () => {
    child.kill('SIGKILL');
    await exited;
  });
  const lines: { cookie?: string; frame?: { type: string; data: { xml: string } } }[] = [];
  createInterface({ input: child.stdout! }).on('line', (line) => lines.push(JSON.parse(line)));
  await until(() => lines.some((l) => l.cookie), 'the child tab to connect');
  const cookie = lines.find((l) => l.cookie)!.cookie!;
  const address = { tabId, session: hashSession(cookie.slice(cookie.indexOf('=') + 1)) };
  await until(() => hub().state(address)?.connected === true, 'the child tab to register');
  await registerHandler(tabId, cookie);
  const received = () => lines.flatMap((l) => (l.frame?.type === 'OnDying' ? [l.frame] : []));
  return { child, address, received, exited };
}

describe('an XMPP message routed to a tab whose browser dies at once', () => {
  it('SIGKILL right after the write: the message is in PopMessages, exactly once', async () => {
    const tab = await childTab();
    tab.child.kill('SIGSTOP'); // the socket stays open and nothing answers: the write lands, unconfirmed
    await sendToAgent('to a tab about to be killed');
    await until(() => hub().state(tab.address)?.awaitingConfirmation === 1, 'the message written to the tab');
    tab.child.kill('SIGKILL');
    await tab.exited;
    const stored = await popExactly(1);
    expect(stored[0]!.content).toContain('to a tab about to be killed');
    // Neither the deadline nor the tab's end stores it a second time.
    passDeadline();
    await until(() => hub().state(tab.address)?.awaitingConfirmation !== 1, 'nothing left to confirm');
    expect(await pop()).toEqual([]);
  });

  it('SIGSTOP: the frozen tab keeps its socket open; at the deadline it is declared dead and the message stored, exactly once', async () => {
    const tab = await childTab();
    tab.child.kill('SIGSTOP');
    await sendToAgent('to a frozen tab');
    await until(() => hub().state(tab.address)?.awaitingConfirmation === 1, 'the message written to the tab');
    expect(await pop()).toEqual([]); // not yet: the tab may still confirm
    passDeadline();
    const stored = await popExactly(1);
    expect(stored[0]!.content).toContain('to a frozen tab');
    expect(hub().state(tab.address)?.connections).toBe(0); // the service let the frozen socket go
    // A later message finds no live tab: stored at once, never written into the frozen socket.
    await sendToAgent('after the tab was declared dead');
    expect((await popExactly(1))[0]!.content).toContain('after the tab was declared dead');
  });

  it('a live tab confirms: it gets the message exactly once and PopMessages stays empty', async () => {
    const tab = await childTab();
    await sendToAgent('to a live tab');
    await until(() => tab.received().length === 1, 'the message on the tab');
    await until(() => hub().state(tab.address)?.awaitingConfirmation === 0, 'the pong');
    passDeadline();
    expect(await pop()).toEqual([]);
    expect(tab.received().map((f) => f.data.xml).filter((x) => x.includes('to a live tab'))).toHaveLength(1);
    // A burst is confirmed too (one ping per burst), and still nothing is stored.
    for (let n = 0; n < 20; n++) await sendToAgent(`burst ${n}`);
    await until(() => tab.received().length === 21, 'the burst on the tab');
    await until(() => hub().state(tab.address)?.awaitingConfirmation === 0, 'the burst confirmed');
    passDeadline();
    expect(await pop()).toEqual([]);
  });
});

describe('the same in Chromium (the page\'s Events.js, the browser answering pings)', () => {
  async function chromiumTab() {
    const chromium = await launchSignallableChromium();
    cleanups.push(() => chromium.kill());
    const context = await chromium.browser.newContext();
    const page = await context.newPage();
    await page.goto(`${service.baseUrl}/`);
    await page.waitForFunction(() => (window as any).Events?.stats.transport === 'websocket');
    await page.evaluate(() => {
      (window as any).got = [];
      (window as any).Events.on('OnDying', (data: { xml: string }) => (window as any).got.push(data.xml));
    });
    const tabId = await page.evaluate(() => (window as any).Events.tabId as string);
    const sid = (await context.cookies(service.baseUrl)).find((c) => c.name === 'tabwire_sid')!;
    const address = { tabId, session: hashSession(sid.value) };
    await until(() => hub().state(address)?.connected === true, 'the page to register');
    await registerHandler(tabId, `${sid.name}=${sid.value}`);
    // A first message there and confirmed: the page's connection is up and settled (not between two
    // connections) before the test freezes or kills the browser.
    await sendToAgent('warm-up');
    await page.waitForFunction(() => (window as any).got.length === 1, undefined, { timeout: DEADLINE_MS });
    await until(() => hub().state(address)?.awaitingConfirmation === 0, 'the warm-up confirmed');
    await page.evaluate(() => ((window as any).got = []));
    return { chromium, page, address };
  }

  /**
   * Freezes the whole browser, sends `text` and waits until the hub has written it into the page's socket and
   * awaits its confirmation, which the frozen browser cannot give. When that never happens, says what did.
   */
  async function writtenToFrozenPage(chromium: Awaited<ReturnType<typeof chromiumTab>>['chromium'], address: TabAddress, text: string): Promise<void> {
    const appendedBefore = await counter('tabwire_events_delivered_total');
    const repliesBefore = human.messages.length;
    await chromium.freeze();
    await sendToAgent(text);
    await until(() => hub().state(address)?.awaitingConfirmation === 1, 'the message written to the page').catch(async (error: unknown) => {
      const appended = (await counter('tabwire_events_delivered_total')) - appendedBefore;
      const replies = human.messages.slice(repliesBefore).map(String);
      const browser = chromium.processes().map((p) => `${p.pid} ${p.state} ${p.name}`);
      throw new Error(
        `${String(error)}; hub state ${JSON.stringify(hub().state(address))}; PopMessages ${JSON.stringify(await pop())}; ` +
          `events appended since the send ${appended}; replies to the sender ${JSON.stringify(replies)}; ` +
          `XMPP component ${service.app.tabwire.xmpp?.state}; Chromium processes ${browser.join(', ')}`,
      );
    });
  }

  it('Chromium SIGKILLed right after the write: the message is in PopMessages, exactly once', async () => {
    const { chromium, address } = await chromiumTab();
    await writtenToFrozenPage(chromium, address, 'to a Chromium about to be killed');
    chromium.signal('SIGKILL');
    const stored = await popExactly(1);
    expect(stored[0]!.content).toContain('to a Chromium about to be killed');
    passDeadline();
    expect(await pop()).toEqual([]);
  });

  it('Chromium SIGSTOPped: stored at the deadline, exactly once', async () => {
    const { chromium, address } = await chromiumTab();
    await writtenToFrozenPage(chromium, address, 'to a frozen Chromium');
    expect(await pop()).toEqual([]);
    passDeadline();
    expect((await popExactly(1))[0]!.content).toContain('to a frozen Chromium');
  });

  it('a live Chromium page gets the message once and PopMessages stays empty', async () => {
    const { page, address } = await chromiumTab();
    await sendToAgent('to a live page');
    await page.waitForFunction(() => (window as any).got.length === 1, undefined, { timeout: DEADLINE_MS });
    await until(() => hub().state(address)?.awaitingConfirmation === 0, 'the pong');
    passDeadline();
    expect(await pop()).toEqual([]);
    expect(await page.evaluate(() => (window as any).got as string[])).toEqual([expect.stringContaining('to a live page')]);
  });
});
