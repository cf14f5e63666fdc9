import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createInterface } from 'node:readline';
import xml from '@xmpp/xml';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { EventFrame } from '../../src/protocol/frames.js';
import { hashSession } from '../../src/http/session.js';
import { postgresDatabase } from '../helpers/backends.js';
import { post } from '../helpers/http.js';
import { startProsody, type ProsodyServer } from '../helpers/prosody.js';
import { startRedis, type RedisServer } from '../helpers/redis.js';
import { startService, type TestService } from '../helpers/service.js';
import { until } from '../helpers/until.js';
import { startXmppClient, type TestXmppClient } from '../helpers/xmpp-client.js';

/**
 * Delivered means confirmed, in a cluster (docs/xmpp.md "Delivered means confirmed"): the node holding the
 * XMPP connection routes a message to a tab held by another node; that node writes it and awaits the tab's
 * confirmation; the confirmation may reach a third place (a long-poll's next poll lands on any node), and
 * its absence is settled by the writing node, against the shared broker, into the shared message store.
 * Two nodes on one PostgreSQL and one Redis, each on a clock the test moves (together), so the deadline
 * passes when the test says.
 */
let redis: RedisServer;
let prosody: ProsodyServer;
let nodes: TestService[];
/** The node holding the XMPP connection, and the one holding the test's tabs. */
let holder: TestService;
let other: TestService;
let human: TestXmppClient;
let jwt: string;
const cleanups: (() => Promise<void>)[] = [];
const NS = 'urn:test:dying-cluster';

beforeAll(async () => {
  redis = await startRedis();
  prosody = await startProsody();
  await prosody.register('human', 'human-password');
  const databaseUrl = await postgresDatabase();
  nodes = [];
  for (let i = 0; i < 2; i++) {
    nodes.push(
      await startService(
        {
          redisUrl: redis.url,
          instanceId: 'generation-1',
          publicBaseUrl: 'http://tabwire.test',
          xmppService: prosody.componentService,
          xmppComponentDomain: prosody.componentDomain,
          xmppComponentSecret: prosody.componentSecret,
          openRegistration: true,
          // A poll with nothing for it is answered within a second: its answer proves it was attached.
          longPollHoldSeconds: 1,
        },
        { databaseUrl },
      ),
    );
  }
  // Each node's clock started when the node did: set them together, as a cluster's synchronised clocks are.
  const latest = Math.max(...nodes.map((n) => n.clock.now()));
  for (const node of nodes) node.clock.advance(latest - node.clock.now());
  await until(() => nodes.some((n) => n.app.tabwire.xmpp!.state === 'online'), 'one node to hold the XMPP connection', 20_000);
  holder = nodes.find((n) => n.app.tabwire.xmpp!.state === 'online')!;
  other = nodes.find((n) => n !== holder)!;
  await post(holder, '/Agent/Account/Create', { userName: 'agent', password: 'agent password' });
  jwt = (await post(other, '/Agent/Account/Login', { userName: 'agent', password: 'agent password', seconds: 3600 })).body.jwt;
  human = await startXmppClient({ service: prosody.c2sService, domain: prosody.domain, username: 'human', password: 'human-password' });
});
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});
afterAll(async () => {
  await human?.stop();
  for (const node of nodes ?? []) await node.close();
  await prosody?.stop();
  await redis?.stop();
});

const pop = async () => (await post(holder, '/Agent/Xmpp/PopMessages', { maxCount: 100 }, { authorization: `Bearer ${jwt}` })).body.messages as { content: string }[];

async function popExactly(n: number): Promise<{ content: string }[]> {
  const got: { content: string }[] = [];
  await until(async () => (got.push(...(await pop())), got.length >= n), `${n} stored message(s)`);
  expect(await pop()).toEqual([]);
  return got;
}

async function sendToAgent(text: string): Promise<void> {
  await human.send(xml('message', { to: `agent@${prosody.componentDomain}`, type: 'chat', id: `m-${randomUUID()}` }, xml('body', {}, text), xml('dying', { xmlns: NS })));
}

async function registerHandler(node: TestService, tabId: string, cookie: string): Promise<void> {
  const answer = await post(node, '/Agent/Xmpp/RegisterEventHandler', { tabId, namespace: NS, function: 'OnDying' }, { authorization: `Bearer ${jwt}`, cookie });
  expect(answer.body).toEqual({});
}

/** The deadline passes on every node (their clocks stay together), and the writing node checks. */
function passDeadline(writer: TestService): void {
  for (const node of nodes) node.clock.advance(10_000);
  writer.app.tabwire.hub.checkConfirmations();
}

/** One long-poll of a tab on `node`, as the reference client sends it; resolves with the frames answered. */
async function poll(node: TestService, tabId: string, o: { cookie?: string; lastEventId?: number } = {}): Promise<{ frames: EventFrame[]; cookie: string | undefined }> {
  const headers: Record<string, string> = { 'content-type': 'text/plain', 'x-tabid': tabId };
  if (o.cookie) headers.cookie = o.cookie;
  if (o.lastEventId !== undefined) headers['x-last-event-id'] = String(o.lastEventId);
  const response = await fetch(`${node.baseUrl}/ClientEvents`, { method: 'POST', headers, body: 'http://127.0.0.1/page' });
  expect(response.status).toBe(200);
  return { frames: (await response.json()) as EventFrame[], cookie: response.headers.get('set-cookie')?.split(';')[0] ?? o.cookie };
}

/** A long-poll tab registered on `node` with a handler; its second poll is held there when this resolves. */
async function longPollTab(node: TestService) {
  const tabId = randomUUID();
  const { cookie } = await poll(node, tabId);
  const address = { tabId, session: hashSession(cookie!.slice(cookie!.indexOf('=') + 1)) };
  await registerHandler(node, tabId, cookie!);
  const held = poll(node, tabId, { cookie });
  await until(() => node.app.tabwire.hub.state(address)?.connected === true, 'the poll to be held');
  return { tabId, cookie: cookie!, address, held };
}

describe('a dying tab in a cluster', () => {
  it('a WebSocket tab on the node without the XMPP connection, SIGKILLed right after the write: stored once', async () => {
    const tabId = randomUUID();
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/fixtures/ws-tab-client.ts', other.wsUrl, tabId], { stdio: ['ignore', 'pipe', 'inherit'] });
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    cleanups.push(async () => {
      child.kill('SIGKILL');
      await exited;
    });
    const lines: { cookie?: string }[] = [];
    createInterface({ input: child.stdout! }).on('line', (line) => lines.push(JSON.parse(line)));
    await until(() => lines.some((l) => l.cookie), 'the child tab to connect');
    const cookie = lines.find((l) => l.cookie)!.cookie!;
    const address = { tabId, session: hashSession(cookie.slice(cookie.indexOf('=') + 1)) };
    await until(() => other.app.tabwire.hub.state(address)?.connected === true, 'the child tab to register');
    await registerHandler(holder, tabId, cookie);

    child.kill('SIGSTOP');
    await sendToAgent('across nodes to a tab about to be killed');
    await until(() => other.app.tabwire.hub.state(address)?.awaitingConfirmation === 1, 'the message written on the tab\'s node');
    child.kill('SIGKILL');
    await exited;
    expect((await popExactly(1))[0]!.content).toContain('across nodes to a tab about to be killed');
  });

  it('long-poll: the answer written on one node is confirmed by the next poll on another; nothing is stored', async () => {
    const tab = await longPollTab(other);
    await sendToAgent('to a polling tab');
    const answered = await tab.held;
    expect(answered.frames.map((f) => f.type)).toEqual(['OnDying']);
    expect(other.app.tabwire.hub.state(tab.address)?.awaitingConfirmation).toBe(1);
    // The reference client polls again at once, here through the other node; its answer (a NOP after the
    // hold) proves the poll was attached, and so the confirmation made.
    expect((await poll(holder, tab.tabId, { cookie: tab.cookie })).frames).toEqual([{ type: 'NOP' }]);
    passDeadline(other);
    await until(() => other.app.tabwire.hub.state(tab.address)?.awaitingConfirmation === 0, 'the writing node to settle its record');
    expect(await pop()).toEqual([]);
  });

  it('long-poll: an answer after which the tab never polls again is stored at the deadline, once; a late poll does not get it', async () => {
    const tab = await longPollTab(other);
    await sendToAgent('to a tab that never polls again');
    const answered = await tab.held;
    const message = answered.frames.find((f) => f.type === 'OnDying')!;
    passDeadline(other);
    expect((await popExactly(1))[0]!.content).toContain('to a tab that never polls again');
    // Even resuming from before it, on another node, the tab gets nothing of it now.
    const late = await poll(holder, tab.tabId, { cookie: tab.cookie, lastEventId: message.id - 1 });
    expect(late.frames.map((f) => f.type)).not.toContain('OnDying');
    expect(await pop()).toEqual([]);
  });
});
