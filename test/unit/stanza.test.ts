import { describe, expect, it } from 'vitest';
import { buildMessageStanza } from '../../src/xmpp/stanza.js';

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
