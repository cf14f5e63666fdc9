import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../../src/agent/api-keys.js';
import { post, registered } from '../helpers/http.js';
import { startService, type TestService } from '../helpers/service.js';
import { TestTab } from '../helpers/tab.js';
import { until } from '../helpers/until.js';

// Agent messaging without an XMPP server: local recipients are routed in-process (embedded default).
let service: TestService;
const tokens: Record<string, string> = {};
const domain = () => service.app.tabwire.config.xmppComponentDomain;

beforeAll(async () => {
  service = await startService({ messageQuotaPerAccount: 3 });
  const { key } = await createApiKey(service.store.apiKeys, service.clock, null);
  for (const user of ['alice', 'bob', 'carol', 'full']) {
    await post(service, '/Agent/Account/Create', { userName: user, password: 'long enough password' }, { 'x-api-key': key });
    tokens[user] = (await post(service, '/Agent/Account/Login', { userName: user, password: 'long enough password', seconds: 3600 })).body.jwt;
  }
});
afterAll(async () => service.close());

const as = (user: string, extra: Record<string, string> = {}) => ({ authorization: `Bearer ${tokens[user]}`, ...extra });
const registerHandler = (user: string, tab: TestTab, body: Record<string, unknown>, cookie = tab.cookie) =>
  post(service, '/Agent/Xmpp/RegisterEventHandler', { tabId: tab.tabId, ...body }, as(user, { cookie }));
const sendXml = (from: string, to: string, xml: string) => post(service, '/Agent/Xmpp/SendXmlMessage', { to: `${to}@${domain()}`, xml }, as(from));
const pop = (user: string, maxCount = 100) => post(service, '/Agent/Xmpp/PopMessages', { maxCount }, as(user));

async function openTab(): Promise<TestTab> {
  const tab = await TestTab.open(service.wsUrl);
  await registered(service, tab.tabId);
  return tab;
}

describe('event handlers and routing', () => {
  it('a message matching a live handler reaches the tab and is not stored; without one it is stored and popped once', async () => {
    const tab = await openTab();
    expect((await registerHandler('bob', tab, { localName: 'x', namespace: 'urn:test', function: 'OnX' })).body).toEqual({});
    const sent = await sendXml('alice', 'bob', '<x xmlns="urn:test" a="1">hello</x>');
    expect(sent.body).toMatchObject({ sent: true });
    const event = await tab.next('OnX');
    expect(event.data).toMatchObject({
      from: `alice@${domain()}`,
      to: `bob@${domain()}`,
      type: 'chat',
      element: { localName: 'x', namespace: 'urn:test', attributes: { a: '1' }, text: 'hello' },
    });
    expect((event.data as { xml: string }).xml).toContain('<x xmlns="urn:test" a="1">hello</x>');
    expect((await pop('bob')).body).toEqual({ messages: [] });

    expect((await registerHandler('bob', tab, { localName: 'x', namespace: 'urn:test', function: '' })).body).toEqual({});
    await post(service, '/Agent/Xmpp/SendTextMessage', { to: `bob@${domain()}`, message: 'kept for later', subject: 'hi' }, as('alice'));
    const popped = await pop('bob');
    expect(popped.body.messages).toHaveLength(1);
    expect(popped.body.messages[0]).toMatchObject({ from: `alice@${domain()}`, to: `bob@${domain()}`, type: 'chat' });
    expect(popped.body.messages[0].content).toContain('<body>kept for later</body>');
    expect(typeof popped.body.messages[0].timestamp).toBe('number');
    expect((await pop('bob')).body.messages).toEqual([]);
    tab.close();
  });

  it('precedence: (localName+namespace), (namespace) and () each get exactly their messages', async () => {
    const tab = await openTab();
    await registerHandler('carol', tab, { localName: 'ping', namespace: 'urn:p', function: 'Specific' });
    await registerHandler('carol', tab, { namespace: 'urn:p', function: 'ByNamespace' });
    await registerHandler('carol', tab, { function: 'Anything' });
    await sendXml('alice', 'carol', '<ping xmlns="urn:p"/>');
    await sendXml('alice', 'carol', '<pong xmlns="urn:p"/>');
    await sendXml('alice', 'carol', '<ping xmlns="urn:other"/>');
    // A marker message last: events reach the tab in order, so once it is in, any extra event of the three is too.
    await sendXml('alice', 'carol', '<marker xmlns="urn:marker"/>');
    const element = (e: { data?: unknown }) => (e.data as { element: { localName: string; namespace: string } }).element;
    await until(() => tab.events.some((e) => element(e).localName === 'marker'), 'the marker message');
    expect(tab.events.map((e) => [e.type, element(e)])).toEqual([
      ['Specific', expect.objectContaining({ localName: 'ping', namespace: 'urn:p' })],
      ['ByNamespace', expect.objectContaining({ localName: 'pong', namespace: 'urn:p' })],
      ['Anything', expect.objectContaining({ localName: 'ping', namespace: 'urn:other' })],
      ['Anything', expect.objectContaining({ localName: 'marker', namespace: 'urn:marker' })],
    ]);
    tab.close();
  });

  it('a message whose tab went away is stored, not lost', async () => {
    const tab = await openTab();
    await registerHandler('bob', tab, { function: 'Gone' });
    // The tab is forgotten: no connection for tabIdleSeconds (moved clock).
    tab.close();
    await tab.closed();
    service.clock.advance(service.app.tabwire.config.tabIdleSeconds * 1000);
    service.app.tabwire.hub.sweep();
    await sendXml('alice', 'bob', '<later xmlns="urn:l"/>');
    const popped = await pop('bob');
    expect(popped.body.messages.map((m: { content: string }) => m.content).join()).toContain('urn:l');
    tab.close();
  });
});

describe('refusals', () => {
  it('no JWT (401)', async () => {
    const tab = await openTab();
    const answer = await post(service, '/Agent/Xmpp/RegisterEventHandler', { tabId: tab.tabId, function: 'F' }, { cookie: tab.cookie });
    expect([answer.status, answer.body.code]).toEqual([401, 'token_missing']);
    tab.close();
  });

  it('a tab of another session (403), a tab already used by another account (403), a tab that is not live (404)', async () => {
    const tab = await openTab();
    const other = await openTab();
    const foreign = await registerHandler('alice', tab, { function: 'F' }, other.cookie);
    expect([foreign.status, foreign.body.code]).toEqual([403, 'tab_session_mismatch']);
    expect((await registerHandler('alice', tab, { function: 'F' })).status).toBe(200);
    const taken = await registerHandler('bob', tab, { function: 'G' });
    expect([taken.status, taken.body.code]).toEqual([403, 'tab_owned_by_other_account']);
    const missing = await post(service, '/Agent/Xmpp/RegisterEventHandler', { tabId: 'no-such-tab-123', function: 'F' }, as('alice', { cookie: tab.cookie }));
    expect([missing.status, missing.body.code]).toEqual([404, 'tab_not_registered']);
    tab.close();
    other.close();
  });

  it('malformed XML, two roots and a DOCTYPE (400); maxCount out of range (400); unknown recipient (404)', async () => {
    for (const xml of ['<x xmlns="urn:t">', '<a/><b/>', '<!DOCTYPE x [<!ENTITY e "boom">]><x>&e;</x>']) {
      const answer = await sendXml('alice', 'bob', xml);
      expect([answer.status, answer.body.code]).toEqual([400, 'xml_invalid']);
    }
    for (const maxCount of [0, 101, 'ten']) {
      const answer = await post(service, '/Agent/Xmpp/PopMessages', { maxCount }, as('alice'));
      expect([answer.status, answer.body.code]).toEqual([400, 'validation_failed']);
    }
    const nobody = await sendXml('alice', 'nobody', '<x xmlns="urn:t"/>');
    expect([nobody.status, nobody.body.code]).toEqual([404, 'recipient_unknown']);
  });

  it('a full message store refuses new messages (507 mailbox_full), and accepts again after a pop', async () => {
    for (let i = 0; i < 3; i++) expect((await sendXml('alice', 'full', `<n xmlns="urn:n">${i}</n>`)).status).toBe(200);
    const refused = await sendXml('alice', 'full', '<n xmlns="urn:n">3</n>');
    expect([refused.status, refused.body.code]).toEqual([507, 'mailbox_full']);
    expect((await pop('full', 1)).body.messages[0].content).toContain('>0<');
    expect((await sendXml('alice', 'full', '<n xmlns="urn:n">4</n>')).status).toBe(200);
  });

  it('sending to another XMPP domain without a server connection (503)', async () => {
    const answer = await post(service, '/Agent/Xmpp/SendTextMessage', { to: 'someone@elsewhere.test', message: 'hi' }, as('alice'));
    expect([answer.status, answer.body.code]).toEqual([503, 'xmpp_unavailable']);
  });
});
