import { describe, expect, it } from 'vitest';
import { EventHandlers, specificity } from '../../src/agent/handlers.js';
import type { InboundMessage } from '../../src/agent/message.js';

const message = (localName: string | null, namespace: string | null, type = 'chat'): InboundMessage => ({
  from: 'someone@xmpp.test/res',
  to: 'agent@agents.xmpp.test',
  type,
  id: 'm1',
  element: localName === null ? undefined : { localName, namespace: namespace ?? '', attributes: {}, text: '' },
  xml: '<message/>',
  body: undefined,
});

/** Every tab of these tests belongs to one session. */
const at = (tabId: string) => ({ tabId, session: 'session-1' });

const sel = (localName: string | null, namespace: string | null, type: string | null) => ({ localName, namespace, type });

describe('event handler precedence', () => {
  it('orders selectors as ARCHITECTURE.md §4 lists them', () => {
    const order = [sel('x', 'n', 't'), sel('x', 'n', null), sel(null, 'n', 't'), sel(null, 'n', null), sel(null, null, 't'), sel(null, null, null)];
    const scores = order.map(specificity);
    expect([...scores].sort((a, b) => b - a)).toEqual(scores);
    expect(new Set(scores).size).toBe(order.length);
  });

  it('delivers each message to exactly the most specific matching handler', () => {
    const handlers = new EventHandlers();
    handlers.register('acct', at('tab-a'), sel('x', 'urn:test', null), 'Specific');
    handlers.register('acct', at('tab-a'), sel(null, 'urn:test', null), 'ByNamespace');
    handlers.register('acct', at('tab-a'), sel(null, null, null), 'Fallback');
    expect(handlers.match('acct', message('x', 'urn:test'))?.fn).toBe('Specific');
    expect(handlers.match('acct', message('y', 'urn:test'))?.fn).toBe('ByNamespace');
    expect(handlers.match('acct', message('x', 'urn:other'))?.fn).toBe('Fallback');
    expect(handlers.match('acct', message(null, null))?.fn).toBe('Fallback');
    expect(handlers.match('other-account', message('x', 'urn:test'))).toBeUndefined();
  });

  it('type-only selectors match the stanza type; namespace+type beats namespace', () => {
    const handlers = new EventHandlers();
    handlers.register('acct', at('tab-a'), sel(null, null, 'headline'), 'Headlines');
    handlers.register('acct', at('tab-a'), sel(null, 'urn:test', null), 'NS');
    handlers.register('acct', at('tab-a'), sel(null, 'urn:test', 'headline'), 'NSHeadline');
    expect(handlers.match('acct', message('z', 'urn:test', 'headline'))?.fn).toBe('NSHeadline');
    expect(handlers.match('acct', message('z', 'urn:test', 'chat'))?.fn).toBe('NS');
    expect(handlers.match('acct', message('z', 'urn:else', 'headline'))?.fn).toBe('Headlines');
    expect(handlers.match('acct', message('z', 'urn:else', 'chat'))).toBeUndefined();
  });

  it('an empty function removes exactly that selector; a tab with handlers of one account refuses another', () => {
    const handlers = new EventHandlers();
    handlers.register('acct', at('tab-a'), sel('x', 'urn:test', null), 'Specific');
    handlers.register('acct', at('tab-a'), sel(null, null, null), 'Fallback');
    expect(handlers.register('intruder', at('tab-a'), sel(null, null, null), 'Steal')).toBe('tab_owned_by_other_account');
    expect(handlers.register('acct', at('tab-a'), sel('x', 'urn:test', null), '')).toBe('removed');
    expect(handlers.match('acct', message('x', 'urn:test'))?.fn).toBe('Fallback');
    handlers.register('acct', at('tab-a'), sel(null, null, null), '');
    expect(handlers.size).toBe(0);
    expect(handlers.register('intruder', at('tab-a'), sel(null, null, null), 'Now')).toBe('registered');
  });

  it('forgets a tab\'s handlers with the tab; the newest registration wins a tie', () => {
    const handlers = new EventHandlers();
    handlers.register('acct', at('tab-a'), sel(null, null, null), 'First');
    handlers.register('acct', at('tab-b'), sel(null, null, null), 'Second');
    expect(handlers.match('acct', message(null, null))?.address.tabId).toBe('tab-b');
    handlers.forgetTab(at('tab-b'));
    expect(handlers.match('acct', message(null, null))?.address.tabId).toBe('tab-a');
    handlers.forgetTab(at('tab-a'));
    expect(handlers.match('acct', message(null, null))).toBeUndefined();
  });
});
