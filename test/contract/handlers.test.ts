import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { HandlerRegistry } from '../../src/handlers/handlers.js';
import type { InboundMessage } from '../../src/protocol/xmpp-message.js';
import { MemoryHandlerRegistry } from '../../src/handlers/memory-handlers.js';
import { RedisHandlerRegistry } from '../../src/handlers/redis-handlers.js';
import { MessageRouter } from '../../src/agent/router.js';
import { specificity } from '../../src/handlers/selector.js';
import { systemClock } from '../../src/clock.js';
import type { TabAddress } from '../../src/protocol/address.js';
import type { Account, AccountStore, MessageStore } from '../../src/store/stores.js';
import type { RedisConnection } from '../../src/redis/connection.js';
import { testConnection, testPrefix } from '../helpers/redis.js';
import { stateBackends, twoNodes } from '../helpers/state-backends.js';
import { until } from '../helpers/until.js';

const silent = pino({ level: 'silent' });

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

/** Two nodes' registries over one shared state (memory: the one node's registry twice). */
interface Nodes {
  a: HandlerRegistry;
  b: HandlerRegistry;
}

const connections: RedisConnection[] = [];
const redisNodes = (maxPerTab = Number.MAX_SAFE_INTEGER, ttlMs = 60_000): Nodes & { redis: RedisConnection } => {
  const prefix = testPrefix('handlers');
  const [ra, rb] = [testConnection(inject('redisUrl'), prefix), testConnection(inject('redisUrl'), prefix)];
  connections.push(ra, rb);
  const make = (redis: RedisConnection) => new RedisHandlerRegistry({ redis, log: silent }, { maxPerTab, ttlMs });
  return { a: make(ra), b: make(rb), redis: ra };
};

const backends = stateBackends<HandlerRegistry, number | undefined>('handlers', {
  memory: (maxPerTab) => {
    const registry = new MemoryHandlerRegistry(maxPerTab);
    return () => registry;
  },
  redis: (redis, _nodeId, maxPerTab = Number.MAX_SAFE_INTEGER) => new RedisHandlerRegistry({ redis, log: silent }, { maxPerTab, ttlMs: 60_000 }),
});

afterAll(async () => {
  await Promise.all(connections.map((c) => c.close()));
});

describe('event handler precedence', () => {
  it('orders selectors as docs/agent-api.md lists them', () => {
    const order = [sel('x', 'n', 't'), sel('x', 'n', null), sel(null, 'n', 't'), sel(null, 'n', null), sel(null, null, 't'), sel(null, null, null)];
    const scores = order.map(specificity);
    expect([...scores].sort((a, b) => b - a)).toEqual(scores);
    expect(new Set(scores).size).toBe(order.length);
  });
});

describe.each(backends)('HandlerRegistry contract: $name', (backend) => {
  /** Two nodes of a fresh cluster whose tabs carry at most `maxPerTab` handlers each. */
  const nodes = (maxPerTab?: number): Nodes => twoNodes(backend, maxPerTab);

  it('delivers each message to exactly the most specific matching handler', async () => {
    const { a: handlers } = nodes();
    await handlers.register('acct', at('tab-a'), sel('x', 'urn:test', null), 'Specific');
    await handlers.register('acct', at('tab-a'), sel(null, 'urn:test', null), 'ByNamespace');
    await handlers.register('acct', at('tab-a'), sel(null, null, null), 'Fallback');
    expect((await handlers.match('acct', message('x', 'urn:test')))?.fn).toBe('Specific');
    expect((await handlers.match('acct', message('y', 'urn:test')))?.fn).toBe('ByNamespace');
    expect((await handlers.match('acct', message('x', 'urn:other')))?.fn).toBe('Fallback');
    expect((await handlers.match('acct', message(null, null)))?.fn).toBe('Fallback');
    expect(await handlers.match('other-account', message('x', 'urn:test'))).toBeUndefined();
    expect(await handlers.match('acct', message('x', 'urn:test'))).toMatchObject({
      accountId: 'acct',
      address: at('tab-a'),
      selector: sel('x', 'urn:test', null),
    });
  });

  it('type-only selectors match the stanza type; namespace+type beats namespace', async () => {
    const { a: handlers } = nodes();
    await handlers.register('acct', at('tab-a'), sel(null, null, 'headline'), 'Headlines');
    await handlers.register('acct', at('tab-a'), sel(null, 'urn:test', null), 'NS');
    await handlers.register('acct', at('tab-a'), sel(null, 'urn:test', 'headline'), 'NSHeadline');
    expect((await handlers.match('acct', message('z', 'urn:test', 'headline')))?.fn).toBe('NSHeadline');
    expect((await handlers.match('acct', message('z', 'urn:test', 'chat')))?.fn).toBe('NS');
    expect((await handlers.match('acct', message('z', 'urn:else', 'headline')))?.fn).toBe('Headlines');
    expect(await handlers.match('acct', message('z', 'urn:else', 'chat'))).toBeUndefined();
  });

  it('an empty function removes exactly that selector; a tab with handlers of one account refuses another', async () => {
    const { a: handlers } = nodes();
    await handlers.register('acct', at('tab-a'), sel('x', 'urn:test', null), 'Specific');
    await handlers.register('acct', at('tab-a'), sel(null, null, null), 'Fallback');
    expect(await handlers.register('intruder', at('tab-a'), sel(null, null, null), 'Steal')).toBe('tab_owned_by_other_account');
    expect(await handlers.register('acct', at('tab-a'), sel('x', 'urn:test', null), '')).toBe('removed');
    expect((await handlers.match('acct', message('x', 'urn:test')))?.fn).toBe('Fallback');
    await handlers.register('acct', at('tab-a'), sel(null, null, null), '');
    expect(await handlers.match('acct', message('x', 'urn:test'))).toBeUndefined();
    expect(await handlers.register('intruder', at('tab-a'), sel(null, null, null), 'Now')).toBe('registered');
  });

  it('forgets a tab\'s handlers with the tab; the newest registration wins a tie', async () => {
    const { a: handlers } = nodes();
    await handlers.register('acct', at('tab-a'), sel(null, null, null), 'First');
    await handlers.register('acct', at('tab-b'), sel(null, null, null), 'Second');
    expect((await handlers.match('acct', message(null, null)))?.address.tabId).toBe('tab-b');
    await handlers.forgetTab(at('tab-b'));
    expect((await handlers.match('acct', message(null, null)))?.address.tabId).toBe('tab-a');
    await handlers.forgetTab(at('tab-a'));
    expect(await handlers.match('acct', message(null, null))).toBeUndefined();
    await handlers.forgetTab(at('never-registered'));
  });

  it('a dead tab never shadows a live one', async () => {
    const { a: handlers } = nodes();
    await handlers.register('acct', at('tab-live'), sel(null, 'urn:test', null), 'Live');
    await handlers.register('acct', at('tab-dead'), sel('x', 'urn:test', null), 'DeadSpecific');
    await handlers.register('acct', at('tab-dead2'), sel(null, 'urn:test', null), 'DeadNewer');
    const isLive = (address: { tabId: string }) => Promise.resolve(address.tabId === 'tab-live');
    expect((await handlers.match('acct', message('x', 'urn:test'), isLive))?.fn).toBe('Live');
    expect(await handlers.match('acct', message('x', 'urn:test'), () => false)).toBeUndefined();
  });

  it('bounds the handlers of a tab; replacing one at the bound is allowed, and a removal makes room', async () => {
    const { a: handlers } = nodes(2);
    expect(await handlers.register('acct', at('tab-a'), sel('one', null, null), 'F1')).toBe('registered');
    expect(await handlers.register('acct', at('tab-a'), sel('two', null, null), 'F2')).toBe('registered');
    expect(await handlers.register('acct', at('tab-a'), sel('three', null, null), 'F3')).toBe('too_many_handlers');
    expect(await handlers.register('acct', at('tab-a'), sel('two', null, null), 'F2b')).toBe('registered');
    expect(await handlers.register('acct', at('tab-b'), sel('three', null, null), 'F3')).toBe('registered');
    expect(await handlers.register('acct', at('tab-a'), sel('one', null, null), '')).toBe('removed');
    expect(await handlers.register('acct', at('tab-a'), sel('three', null, null), 'F3')).toBe('registered');
    expect((await handlers.match('acct', message('two', 'urn:x')))?.fn).toBe('F2b');
  });

  it('concurrent registrations on one tab, through both nodes, never exceed the bound', async () => {
    const { a, b } = nodes(5);
    const outcomes = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? a : b).register('acct', at('tab-c'), sel(`n${i}`, null, null), `F${i}`)));
    expect(outcomes.filter((o) => o === 'registered')).toHaveLength(5);
    expect(outcomes.filter((o) => o === 'too_many_handlers')).toHaveLength(15);
  });

  it('a handler registered through one node is matched and forgotten through the other', async () => {
    const { a, b } = nodes();
    expect(await a.register('acct', at('tab-x'), sel('ping', 'urn:p', null), 'OnPing')).toBe('registered');
    expect(await b.match('acct', message('ping', 'urn:p'))).toMatchObject({ fn: 'OnPing', address: at('tab-x') });
    expect(await b.register('other', at('tab-x'), sel(null, null, null), 'Steal')).toBe('tab_owned_by_other_account');
    await b.forgetTab(at('tab-x'));
    expect(await a.match('acct', message('ping', 'urn:p'))).toBeUndefined();
  });
});

describe('Redis handler registry: expiry', () => {
  let nodes: ReturnType<typeof redisNodes>;
  beforeAll(() => {
    nodes = redisNodes(10, 300);
  });

  it('registrations of a tab nobody vouches for expire by themselves, and the index forgets them', async () => {
    await nodes.a.register('acct', at('tab-gone'), sel('x', 'urn:t', null), 'F');
    expect((await nodes.b.match('acct', message('x', 'urn:t')))?.fn).toBe('F');
    await until(async () => (await nodes.b.match('acct', message('x', 'urn:t'))) === undefined, 'the registration to expire');
    await until(async () => (await nodes.redis.client.keys(`${nodes.redis.prefix}handlers:*`)).every((k) => k.endsWith(':seq')), 'the selector index to empty');
  });

  it('touchTabs keeps a live tab\'s registrations for another TTL', async () => {
    const lasting = redisNodes(10, 60_000);
    await lasting.a.register('acct', at('tab-live'), sel('y', 'urn:t', null), 'G');
    const tabKey = lasting.redis.key('handlers', 'tab', 'session-1:tab-live');
    const setKey = lasting.redis.key('handlers', 'sel', 'acct', JSON.stringify(['y', 'urn:t', null]));
    // As if most of the TTL had passed.
    await lasting.redis.client.pexpire(tabKey, 1_000);
    await lasting.redis.client.pexpire(setKey, 1_000);
    await lasting.b.touchTabs([at('tab-live'), at('tab-without-handlers')]);
    expect(await lasting.redis.client.pttl(tabKey)).toBeGreaterThan(30_000);
    expect(await lasting.redis.client.pttl(setKey)).toBeGreaterThan(30_000);
    expect(await lasting.redis.client.exists(lasting.redis.key('handlers', 'tab', 'session-1:tab-without-handlers'))).toBe(0);
  });
});

/** A router on one node with just enough of a store: one active account `agent`, a message list. */
function routerOn(handlers: HandlerRegistry, isLive: (address: TabAddress) => boolean | Promise<boolean> = () => true) {
  const account: Account = { id: 'acct', userName: 'agent', passwordHash: '', email: null, state: 'active', createdAt: 0 };
  const stored: string[] = [];
  const delivered: { to: TabAddress; type: string }[] = [];
  const router = new MessageRouter(
    {
      accounts: { byUserName: async (name: string) => (name === 'agent' ? account : undefined) } as unknown as AccountStore,
      handlers,
      delivery: { deliver: async (to, event) => (delivered.push({ to, type: event.type }), true) },
      isConnected: isLive,
      messages: { append: async (m: { content: string }) => (stored.push(m.content), true) } as unknown as MessageStore,
      clock: systemClock,
      log: silent,
    },
    { componentDomain: 'agents.xmpp.test', quota: 100 },
  );
  return { router, stored, delivered };
}

describe('Redis handler registry without Redis', () => {
  it('a registration answers 503 shared_state_unavailable; forgetting and touching never reject', async () => {
    const redis = testConnection('redis://127.0.0.1:1', testPrefix('handlers-down'));
    connections.push(redis);
    const registry = new RedisHandlerRegistry({ redis, log: silent }, { maxPerTab: 5, ttlMs: 60_000 });
    await expect(registry.register('acct', at('tab-a'), sel(null, null, null), 'F')).rejects.toMatchObject({ code: 'shared_state_unavailable', status: 503 });
    await expect(registry.forgetTab(at('tab-a'))).resolves.toBeUndefined();
    await expect(registry.touchTabs([at('tab-a')])).resolves.toBeUndefined();
  });
});

describe('MessageRouter over a shared registry', () => {
  it('a handler registered through node A routes a stanza arriving on node B to the tab (live on any node)', async () => {
    const { a, b } = redisNodes();
    await a.register('acct', at('tab-on-a'), sel('x', 'urn:test', null), 'OnX');
    const { router, delivered, stored } = routerOn(b, async (address) => address.tabId === 'tab-on-a');
    expect(await router.route(message('x', 'urn:test'))).toBe('delivered');
    expect(delivered).toEqual([{ to: at('tab-on-a'), type: 'OnX' }]);
    expect(stored).toEqual([]);
  });

  it('a registry that cannot answer (Redis down) costs the push, not the message: it is stored for PopMessages', async () => {
    const failing: HandlerRegistry = {
      register: async () => 'registered',
      match: async () => {
        throw new Error('Redis unreachable');
      },
      forgetTab: async () => undefined,
      touchTabs: async () => undefined,
    };
    const { router, delivered, stored } = routerOn(failing);
    expect(await router.route(message('x', 'urn:test'))).toBe('stored');
    expect(delivered).toEqual([]);
    expect(stored).toEqual(['<message/>']);
  });
});
