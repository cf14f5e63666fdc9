import xml from '@xmpp/xml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postgresDatabase } from '../helpers/backends.js';
import { post, registered } from '../helpers/http.js';
import { startProsody, type ProsodyServer } from '../helpers/prosody.js';
import { startRedis, type RedisServer } from '../helpers/redis.js';
import { startService, type TestService } from '../helpers/service.js';
import { TestTab } from '../helpers/tab.js';
import { until } from '../helpers/until.js';
import { startXmppClient, type TestXmppClient } from '../helpers/xmpp-client.js';

/**
 * Three nodes on one PostgreSQL database and one Redis, attached to one Prosody: one node holds the component
 * connection (a lease), handlers registered through any node reach tabs on any node, and sends from
 * any node go out through the holder (docs/deployment.md, docs/redis.md). Every node has the public
 * base URL of the deployment (tokens name it as their issuer), as behind a load balancer.
 */
let redis: RedisServer;
let prosody: ProsodyServer;
let nodes: TestService[];
let human: TestXmppClient;
let jwt: string;

const chat = (to: string, text: string, extra: xml.Element) => xml('message', { to, type: 'chat', id: `m-${Math.random()}` }, xml('body', {}, text), extra);

beforeAll(async () => {
  redis = await startRedis();
  prosody = await startProsody();
  await prosody.register('human', 'human-password');
  // One PostgreSQL database for the nodes, as in a real cluster.
  const databaseUrl = await postgresDatabase();
  nodes = [];
  for (let i = 0; i < 3; i++) {
    nodes.push(
      await startService(
        { redisUrl: redis.url, instanceId: 'generation-1', publicBaseUrl: 'http://tabwire.test', xmppService: prosody.componentService, xmppComponentDomain: prosody.componentDomain, xmppComponentSecret: prosody.componentSecret, openRegistration: true },
        { databaseUrl, realClock: true },
      ),
    );
  }
  await until(() => nodes.some((n) => n.app.tabwire.xmpp!.state === 'online'), 'one node to hold the XMPP connection', 20_000);
  await post(nodes[0]!, '/Agent/Account/Create', { userName: 'agent', password: 'agent password' });
  jwt = (await post(nodes[1]!, '/Agent/Account/Login', { userName: 'agent', password: 'agent password', seconds: 3600 })).body.jwt;
  human = await startXmppClient({ service: prosody.c2sService, domain: prosody.domain, username: 'human', password: 'human-password' });
});
afterAll(async () => {
  await human?.stop();
  for (const node of nodes ?? []) await node.close();
  await prosody?.stop();
  await redis?.stop();
});

describe('XMPP in a cluster', () => {
  it('exactly one node holds the component connection; the others stand by', () => {
    expect(nodes.map((n) => n.app.tabwire.xmpp!.state).filter((s) => s === 'online')).toHaveLength(1);
    expect(nodes.map((n) => n.app.tabwire.xmpp!.state).filter((s) => s === 'standby')).toHaveLength(2);
  });

  it('RegisterEventHandler through any node works for a tab on any other node, and a stanza through Prosody reaches it', async () => {
    const agent = `agent@${prosody.componentDomain}`;
    for (let i = 0; i < 3; i++) {
      const tab = await TestTab.open(nodes[i]!.wsUrl);
      await registered(nodes[i]!, tab.tabId);
      const via = nodes[(i + 1) % 3]!;
      const answer = await post(via, '/Agent/Xmpp/RegisterEventHandler', { tabId: tab.tabId, localName: 'x', namespace: `urn:test:${i}`, function: 'OnX' }, { authorization: `Bearer ${jwt}`, cookie: tab.cookie });
      expect(answer.body).toEqual({});
      await human.send(chat(agent, `to the tab on node ${i}`, xml('x', { xmlns: `urn:test:${i}` })));
      const event = await tab.next('OnX');
      expect((event.data as { xml: string }).xml).toContain(`to the tab on node ${i}`);
      tab.close();
    }
    // None of them was stored instead.
    expect((await post(nodes[2]!, '/Agent/Xmpp/PopMessages', { maxCount: 10 }, { authorization: `Bearer ${jwt}` })).body.messages).toEqual([]);
  });

  it('a message sent through a standby node goes out through the holder', async () => {
    const standby = nodes.find((n) => n.app.tabwire.xmpp!.state === 'standby')!;
    const sent = await post(standby, '/Agent/Xmpp/SendTextMessage', { to: `human@${prosody.domain}`, message: 'from a standby node' }, { authorization: `Bearer ${jwt}` });
    expect(sent.status).toBe(200);
    const got = await human.nextMessage((m) => m.getChildText('body') === 'from a standby node', 10_000);
    expect(got.attrs.from).toBe(`agent@${prosody.componentDomain}`);
  });
});
