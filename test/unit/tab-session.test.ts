import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { TabRegistry } from '../../src/hub/registry.js';
import { TabSession } from '../../src/hub/tab-session.js';
import { storeUnavailable } from '../../src/store/sql/guarded-dialect.js';
import type { BindOutcome, TabStore } from '../../src/store/stores.js';
import { A, B, FakeConnection, makeHub } from '../helpers/hub-fixtures.js';

// One outcome, one Disconnect: the WebSocket closes with its code and the long-poll answers its problem
// (docs/events.md "How a connection ends").

/** Tab bindings in memory; `down` makes every call an outage of the store. */
function tabStore(state: { down: boolean }): TabStore {
  const bindings = new Map<string, string>();
  const up = () => {
    if (state.down) throw storeUnavailable(new Error('Connection terminated unexpectedly'));
  };
  return {
    async bind(tabId, session): Promise<BindOutcome> {
      up();
      const owner = bindings.get(tabId);
      if (owner === undefined) bindings.set(tabId, session);
      return owner === undefined ? 'created' : owner === session ? 'bound' : 'conflict';
    },
    async sessionOf(tabId) {
      up();
      return bindings.get(tabId);
    },
    async bindingOf(tabId) {
      up();
      const session = bindings.get(tabId);
      return session === undefined ? undefined : { session, origin: null };
    },
    async remove(tabId, session) {
      up();
      if (bindings.get(tabId) === session) bindings.delete(tabId);
    },
    async refresh() {},
    async purgeUnseen() {
      return 0;
    },
  };
}

function node(o: { maxTabsPerSession?: number } = {}) {
  const state = { down: false };
  const { hub, clock } = makeHub(o);
  const registry = new TabRegistry({ tabs: tabStore(state), codes: { recentTabEvents: async () => [] }, writtenResults: { writtenAmong: async () => new Set<string>() }, hub, clock }, { resultReplayMs: 60_000, registrationWaitMs: 100, tabIdleMs: 60_000 });
  return { state, hub, node: { registry, hub, log: pino({ level: 'silent' }) } };
}

const at = (tabId: string) => ({ tabId, location: 'http://127.0.0.1/page' });
const soon = () => ({ deadline: performance.now() + 50 });

describe('TabSession', () => {
  it('registers, and lets the hub go of the connection when it ends', async () => {
    const { hub, node: n } = node();
    const connection = new FakeConnection();
    const tab = new TabSession(n, connection, A.session);
    expect(await tab.register(at(A.tabId), soon())).toBeUndefined();
    expect(hub.state(A)?.connections).toBe(1);
    tab.closed();
    expect(hub.state(A)?.connections).toBe(0);
  });

  it("another session's tab: close 4403 and 403 tab_session_mismatch, from one value", async () => {
    const { node: n } = node();
    await new TabSession(n, new FakeConnection(), A.session).register(at(A.tabId), soon());
    const ended = await new TabSession(n, new FakeConnection('long-poll'), B.session).poll(at(B.tabId), soon());
    expect(ended).toMatchObject({ kind: 'tab_session_mismatch', closeCode: 4403, reason: 'tab_session_mismatch', problem: { code: 'tab_session_mismatch', status: 403 } });
  });

  it('one tab too many: close 4429 and 429 tab_limit_reached with Retry-After = tabIdleSeconds', async () => {
    const { node: n } = node({ maxTabsPerSession: 1 });
    await new TabSession(n, new FakeConnection(), A.session).register(at('tab-00000001'), soon());
    const ended = await new TabSession(n, new FakeConnection(), A.session).register(at('tab-00000002'), soon());
    expect(ended).toMatchObject({ kind: 'tab_limit_reached', closeCode: 4429, problem: { status: 429, extra: { retryAfter: 60 } } });
  });

  it('a second tab on one connection: close 4400 tab_already_registered', async () => {
    const { node: n } = node();
    const tab = new TabSession(n, new FakeConnection(), A.session);
    await tab.register(at('tab-00000001'), soon());
    expect(await tab.register(at('tab-00000002'), soon())).toMatchObject({ kind: 'frame_invalid', closeCode: 4400, reason: 'tab_already_registered' });
  });

  it('an outage past the wait: close 1013 and 503 with the outage code; while stopping, ended as at shutdown (200 [])', async () => {
    const { state, node: n } = node();
    state.down = true;
    const ended = await new TabSession(n, new FakeConnection(), A.session).register(at(A.tabId), soon());
    expect(ended).toMatchObject({ kind: 'unavailable', closeCode: 1013, reason: 'store_unavailable', problem: { code: 'store_unavailable', status: 503 } });
    const stopping = await new TabSession(n, new FakeConnection('long-poll'), A.session).poll(at(A.tabId), { ...soon(), stopping: () => true });
    expect(stopping).toMatchObject({ kind: 'shutdown', closeCode: 1001, problem: undefined });
  });
});
