import xml from '@xmpp/xml';
import { describe, expect, it } from 'vitest';
import { buildMessageStanza, parseMessageStanza } from '../../src/xmpp/stanza.js';

const message = (over: Record<string, string>) => ({
  from: 'ada@agents.example',
  to: 'bob@agents.example',
  type: 'chat',
  id: 'm1',
  children: [{ kind: 'text' as const, name: 'body' as const, text: 'hi' }],
  ...over,
});

describe('the stanza builder', () => {
  it('an id or to with characters XML forbids was written into the stanza unchecked', () => {
    expect(() => buildMessageStanza(message({ id: 'a\u0000b' }))).toThrow(/not allowed in XML/);
    expect(() => buildMessageStanza(message({ to: 'bob@agents.example/\ud800' }))).toThrow(/not allowed in XML/);
    expect(buildMessageStanza(message({ id: 'ok \u{1F600}' })).toString()).toContain('id="ok \u{1F600}"');
  });
});

describe('the stanza parser', () => {
  const received = (type?: string) =>
    parseMessageStanza(xml('message', { from: 'friend@xmpp.test/r', to: 'ada@agents.xmpp.test', ...(type === undefined ? {} : { type }) }, xml('body', {}, 'hi')));

  it('a message type RFC 6121 does not define (here longer than the stored column) was stored as sent; it counts as normal', () => {
    expect(received('x'.repeat(40))!.type).toBe('normal');
    expect(received('Chat')!.type).toBe('normal');
    expect(received()!.type).toBe('normal');
    for (const type of ['chat', 'groupchat', 'headline', 'normal']) expect(received(type)!.type).toBe(type);
    expect(received('error')).toBeUndefined();
  });
});
