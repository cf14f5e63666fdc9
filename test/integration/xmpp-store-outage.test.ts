import xml from '@xmpp/xml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { post } from '../helpers/http.js';
import { startPostgres, type PostgresServer } from '../helpers/postgres.js';
import { startProsody, type ProsodyServer } from '../helpers/prosody.js';
import { startService, type TestService } from '../helpers/service.js';
import { until } from '../helpers/until.js';
import { startXmppClient, type TestXmppClient } from '../helpers/xmpp-client.js';

// An XMPP message to an agent account while PostgreSQL is down (docs/xmpp.md, docs/deployment.md "Outages"):
// it can be neither pushed (the account is looked up in the store) nor stored for PopMessages, so the sender
// gets an error of type "wait" (RFC 6120 §8.3.2) instead of silence; once PostgreSQL is back, messages are
// stored again. A private PostgreSQL and Prosody: this test stops the former.
let server: PostgresServer;
let prosody: ProsodyServer;
let service: TestService;
let human: TestXmppClient;
let agentJwt: string;

beforeAll(async () => {
  [server, prosody] = await Promise.all([startPostgres(), startProsody()]);
  await prosody.register('human', 'human-password');
  service = await startService(
    { xmppService: prosody.componentService, xmppComponentDomain: prosody.componentDomain, xmppComponentSecret: prosody.componentSecret, openRegistration: true },
    { databaseUrl: await server.createDatabase() },
  );
  await until(() => service.app.tabwire.xmpp!.online, 'the component to come online');
  await post(service, '/Agent/Account/Create', { userName: 'agent', password: 'agent password' });
  agentJwt = (await post(service, '/Agent/Account/Login', { userName: 'agent', password: 'agent password', seconds: 3600 })).body.jwt;
  human = await startXmppClient({ service: prosody.c2sService, domain: prosody.domain, username: 'human', password: 'human-password' });
});

afterAll(async () => {
  await human?.stop();
  await service?.close();
  await prosody?.stop();
  await server?.stop();
});

const chat = (to: string, text: string, id: string) => xml('message', { to, type: 'chat', id }, xml('body', {}, text));

describe('an XMPP message during a PostgreSQL outage', () => {
  it('is bounced with a temporary error (type wait), and stored again once PostgreSQL is back', async () => {
    const agentJid = `agent@${prosody.componentDomain}`;
    await server.down();
    try {
      await human.send(chat(agentJid, 'during the outage', 'during'));
      const error = await human.nextMessage((m) => m.attrs.id === 'during' && m.attrs.type === 'error', 30_000);
      expect(error.attrs.from).toBe(agentJid);
      expect(error.getChild('error')!.attrs.type).toBe('wait');
      expect(error.getChild('error')!.getChild('resource-constraint')).toBeDefined();
    } finally {
      await server.up();
    }
    // The sender tries again after the outage: the message is stored for PopMessages (no handler is registered).
    const pop = () => post(service, '/Agent/Xmpp/PopMessages', { maxCount: 10 }, { authorization: `Bearer ${agentJwt}` });
    let popped: { content: string }[] = [];
    await until(async () => {
      const answer = await pop();
      return answer.status === 200;
    }, 'PopMessages served again', 30_000);
    await human.send(chat(agentJid, 'after the outage', 'after'));
    await until(async () => {
      popped = popped.concat(((await pop()).body.messages ?? []) as { content: string }[]);
      return popped.length > 0;
    }, 'the message sent after the outage stored');
    expect(popped.map((m) => m.content).join('')).toContain('after the outage');
    expect(popped.map((m) => m.content).join('')).not.toContain('during the outage');
  }, 120_000);
});
