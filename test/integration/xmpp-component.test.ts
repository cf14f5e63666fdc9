import xml from '@xmpp/xml';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InboundMessage } from '../../src/protocol/xmpp-message.js';
import { XmppComponent } from '../../src/xmpp/component.js';
import { toInboundMessage } from '../../src/xmpp/stanza.js';
import { parseXmlPayload } from '../../src/xmpp/xml-payload.js';
import { startProsody, type ProsodyServer } from '../helpers/prosody.js';
import { startXmppClient, type TestXmppClient } from '../helpers/xmpp-client.js';

const NS_STANZAS = 'urn:ietf:params:xml:ns:xmpp-stanzas';

let prosody: ProsodyServer;
let user: TestXmppClient;
let component: XmppComponent;
const received: InboundMessage[] = [];
const waiters = new Set<() => void>();

/** The first InboundMessage (already received or still to come) matching `match`. */
async function inbound(match: (m: InboundMessage) => boolean, timeoutMs = 5_000): Promise<InboundMessage> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = received.find(match);
    if (found) return found;
    if (Date.now() > deadline) throw new Error(`no matching inbound message within ${timeoutMs} ms`);
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, 100);
      waiters.add(() => (clearTimeout(timer), resolve()));
    });
  }
}

beforeAll(async () => {
  prosody = await startProsody();
  await prosody.register('alice', 'alice-password');
  component = new XmppComponent({
    service: prosody.componentService,
    domain: prosody.componentDomain,
    password: prosody.componentSecret,
    log: pino({ level: 'silent' }),
    onMessage: async (message) => {
      received.push(message);
      for (const wake of waiters) wake();
      waiters.clear();
    },
  });
  await component.start();
  user = await startXmppClient({ service: prosody.c2sService, domain: prosody.domain, username: 'alice', password: 'alice-password' });
});

afterAll(async () => {
  await user?.stop();
  await component?.stop();
  await prosody?.stop();
});

const agentJid = () => `agent@${prosody.componentDomain}`;

describe('XMPP component against a private Prosody', () => {
  it('is online, and the test client logged in with PLAIN', () => {
    expect(component.online).toBe(true);
    expect(user.mechanism).toBe('PLAIN');
    expect(user.bareJid).toBe(`alice@${prosody.domain}`);
  });

  it('a message from a real client reaches onMessage, parsed', async () => {
    await user.send(
      xml('message', { to: agentJid(), type: 'chat', id: 'm1' }, xml('body', {}, 'hi'), xml('x', { xmlns: 'urn:test:x', a: '1' }, 'text')),
    );
    const message = await inbound((m) => m.id === 'm1');
    expect(message).toMatchObject({
      from: user.jid,
      to: agentJid(),
      type: 'chat',
      id: 'm1',
      body: 'hi',
      element: { localName: 'x', namespace: 'urn:test:x', attributes: { a: '1' }, text: 'text' },
    });
    expect(message.xml).toContain('<body>hi</body>');
    expect(message.xml).toContain('urn:test:x');
  });

  it('a message with only a body reports the body as its element, in jabber:client; type defaults to normal', async () => {
    await user.send(xml('message', { to: agentJid(), id: 'm2' }, xml('body', {}, 'plain')));
    const message = await inbound((m) => m.id === 'm2');
    expect(message.type).toBe('normal');
    expect(message.element).toEqual({ localName: 'body', namespace: 'jabber:client', attributes: {}, text: 'plain' });
  });

  it('a locally routed message (toInboundMessage) has the same shape as one that crossed Prosody', async () => {
    const payload = `<x xmlns='urn:test:x' a='1'>text</x>`;
    await user.send(xml('message', { to: agentJid(), type: 'chat', id: 'm4' }, xml('body', {}, 'hi'), xml('x', { xmlns: 'urn:test:x', a: '1' }, 'text')));
    const remote = await inbound((m) => m.id === 'm4');
    const local = toInboundMessage({
      from: user.jid,
      to: agentJid(),
      type: 'chat',
      id: 'm4',
      children: [{ kind: 'text', name: 'body', text: 'hi' }, { kind: 'xml', xml: payload }],
    });
    expect(local).toEqual({ ...remote, xml: local.xml });
  });

  it('send() delivers text and a parsed XML child to the client', async () => {
    await component.send({
      from: agentJid(),
      to: user.bareJid,
      type: 'chat',
      id: 'out1',
      children: [
        { kind: 'text', name: 'body', text: 'hello <alice> & co' },
        { kind: 'xml', xml: `<data xmlns='urn:test:data' n="2"><item>one</item></data>` },
      ],
    });
    const message = await user.nextMessage((m) => m.attrs.id === 'out1');
    expect(message.attrs.from).toBe(agentJid());
    expect(message.getChildText('body')).toBe('hello <alice> & co');
    const data = message.getChild('data', 'urn:test:data');
    expect(data?.attrs.n).toBe('2');
    expect(data?.getChildText('item')).toBe('one');
  });

  it('send() refuses an invalid XML child and stays online', async () => {
    const bad = { from: agentJid(), to: user.bareJid, type: 'chat', id: 'out2', children: [{ kind: 'xml' as const, xml: '<p:x/>' }] };
    await expect(component.send(bad)).rejects.toThrow(/unbound namespace prefix/);
    expect(component.online).toBe(true);
  });

  it('bounce() arrives at the sender as a stanza error', async () => {
    await user.send(xml('message', { to: `nobody@${prosody.componentDomain}`, type: 'chat', id: 'm3' }, xml('body', {}, 'anyone?')));
    const original = await inbound((m) => m.id === 'm3');
    await component.bounce(original, 'item-not-found');
    const error = await user.nextMessage((m) => m.attrs.id === 'm3' && m.attrs.type === 'error');
    expect(error.attrs.from).toBe(`nobody@${prosody.componentDomain}`);
    expect(error.getChild('error')?.attrs.type).toBe('cancel');
    expect(error.getChild('error')?.getChild('item-not-found', NS_STANZAS)).toBeDefined();

    await component.bounce(original, 'resource-constraint');
    const wait = await user.nextMessage((m) => m.attrs.id === 'm3' && m.getChild('error')?.attrs.type === 'wait');
    expect(wait.getChild('error')?.getChild('resource-constraint', NS_STANZAS)).toBeDefined();
  });

  it('survives a Prosody restart: online and routing again', async () => {
    const before = user;
    await prosody.restart(); // ~1 s of it is Prosody waiting for @xmpp/client, which does not answer the server's </stream:stream>
    // Reconnect attempts back off to at most 5 s apart; the deadline only bounds a broken run.
    const deadline = Date.now() + 20_000;
    await before.stop();
    user = await startXmppClient({ service: prosody.c2sService, domain: prosody.domain, username: 'alice', password: 'alice-password' });
    while (!component.online) {
      if (Date.now() > deadline) throw new Error('the component did not come back online');
      await new Promise((r) => setTimeout(r, 20));
    }
    await user.send(xml('message', { to: agentJid(), type: 'chat', id: 'after-restart' }, xml('body', {}, 'back')));
    await inbound((m) => m.id === 'after-restart', 15_000);
  });
});

describe('parseXmlPayload', () => {
  it('returns the re-serialized element', () => {
    expect(parseXmlPayload(`  <a xmlns="urn:a" b='1'><c>x &amp; y</c></a>\n`)).toEqual({ ok: true, xml: '<a xmlns="urn:a" b="1"><c>x &amp; y</c></a>' });
  });

  it.each([
    ['malformed', '<a><b></a>'],
    ['unclosed', '<a><b/>'],
    ['two roots', '<a/><b/>'],
    ['text after the root', '<a/>tail'],
    ['text before the root', 'lead<a/>'],
    ['a DOCTYPE', '<!DOCTYPE a [<!ENTITY x SYSTEM "file:///etc/passwd">]><a>&x;</a>'],
    ['an unknown entity', '<a>&x;</a>'],
    ['a processing instruction', '<?xml version="1.0"?><a/>'],
    ['an unbound prefix', '<p:a/>'],
    ['a control character', '<a>\u0001</a>'],
    ['an empty string', ''],
    ['more than 64 KiB', `<a>${'x'.repeat(64 * 1024)}</a>`],
  ])('refuses %s', (_, text) => {
    const result = parseXmlPayload(text);
    expect(result.ok).toBe(false);
  });
});
