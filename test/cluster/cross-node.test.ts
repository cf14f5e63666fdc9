import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchSignInfo, postDecision } from '../../src/cli/signer.js';
import { privateKeyFromPem } from '../../src/identity/keys.js';
import type { QuickLoginResult } from '../../src/protocol/events.js';
import { postgresDatabase } from '../helpers/backends.js';
import { post, registered } from '../helpers/http.js';
import { startRedis, type RedisServer } from '../helpers/redis.js';
import { makeIdentity, startService, type TestService } from '../helpers/service.js';
import { TestTab } from '../helpers/tab.js';
import { until } from '../helpers/until.js';

/**
 * Three nodes on one PostgreSQL database and one Redis, in this process: a tab's WebSocket on one node, its QR
 * request on another, the signature on a third (docs/deployment.md). No load balancer: the test
 * picks the node of each request itself, as a round-robin balancer without stickiness would.
 */
let redis: RedisServer;
let nodes: TestService[];

beforeAll(async () => {
  redis = await startRedis();
  // One PostgreSQL database for the nodes, as in a real cluster.
  const databaseUrl = await postgresDatabase();
  nodes = [];
  for (let i = 0; i < 3; i++) nodes.push(await startService({ redisUrl: redis.url, instanceId: 'generation-1' }, { databaseUrl }));
});
afterAll(async () => {
  for (const node of nodes ?? []) await node.close();
  await redis?.stop();
});

/** The same path on another node. */
const on = (node: TestService, url: string): string => node.baseUrl + new URL(url).pathname;

describe('three nodes, no sticky sessions', () => {
  it('tab on node 1, QR request on node 2, signature on node 3: SignatureReceived reaches the tab once', async () => {
    const [one, two, three] = nodes as [TestService, TestService, TestService];
    const ada = await makeIdentity(one, { FIRST: 'Ada' });
    const tab = await TestTab.open(one.wsUrl);
    await registered(one, tab.tabId);
    const qr = await post(two, '/QuickLogin', { mode: 'text', purpose: 'Across nodes', serviceId: '', tab: tab.tabId }, { cookie: tab.cookie });
    expect(qr.status).toBe(200);
    const signUrl = on(three, qr.body.signUrl);
    const info = await fetchSignInfo(signUrl);
    expect((await postDecision(signUrl, info, ada.identity.id, privateKeyFromPem(ada.privateKeyPem), 'approve')).state).toBe('approved');
    const event = await tab.next('SignatureReceived');
    expect((event.data as QuickLoginResult).Id).toBe(ada.identity.id);
    // A marker sent after it from node 2 arrives next: nothing (no second copy) came in between.
    await two.app.tabwire.hub.deliver({ tabId: tab.tabId, session: (await one.store.tabs.sessionOf(tab.tabId))! }, { type: 'Marker', data: null });
    await tab.next('Marker');
    expect(tab.events.map((e) => e.type)).toEqual(['SignatureReceived', 'Marker']);
    tab.close();
  });

  it('a node that has the tab nowhere sees it held and connected through the broker', async () => {
    const [one, , three] = nodes as [TestService, TestService, TestService];
    const tab = await TestTab.open(one.wsUrl);
    await registered(one, tab.tabId);
    const address = { tabId: tab.tabId, session: (await one.store.tabs.sessionOf(tab.tabId))! };
    expect(three.app.tabwire.hub.state(address)).toBeUndefined();
    expect(await three.app.tabwire.hub.isConnected(address)).toBe(true);
    tab.close();
  });

  it('a node that cannot reach Redis is not ready (503 problem+json) until Redis is back', async () => {
    const one = nodes[0]!;
    const ready = async () => (await fetch(`${one.baseUrl}/readyz`)).status;
    expect(await ready()).toBe(200);
    await redis.stopServer();
    await until(async () => (await ready()) === 503, 'readyz to fail');
    const answer = await fetch(`${one.baseUrl}/readyz`);
    expect(answer.headers.get('content-type')).toContain('application/problem+json');
    expect(((await answer.json()) as { code: string }).code).toBe('shared_state_unavailable');
    await redis.start();
    await until(async () => (await ready()) === 200, 'readyz to recover', 30_000);
  });
});
