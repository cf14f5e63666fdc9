import { describe, expect, it } from 'vitest';
import { TabRegistry } from '../../src/hub/registry.js';
import type { TabEventRecord } from '../../src/store/code-store.js';
import { storeUnavailable } from '../../src/store/sql/guarded-dialect.js';
import type { BindOutcome, TabStore } from '../../src/store/stores.js';
import { A, FakeConnection, makeHub, tick } from '../helpers/hub-fixtures.js';

// A Register that an outage broke part-way is tried again by the tab session (hub/outage-wait.ts): the second
// try must do what the first one would have (docs/events.md "Outages").

/** Tab bindings in memory. */
function tabStore(): Pick<TabStore, 'bind' | 'sessionOf' | 'remove'> {
  const bindings = new Map<string, string>();
  return {
    async bind(tabId, session): Promise<BindOutcome> {
      const owner = bindings.get(tabId);
      if (owner === undefined) bindings.set(tabId, session);
      return owner === undefined ? 'created' : owner === session ? 'bound' : 'conflict';
    },
    async sessionOf(tabId) {
      return bindings.get(tabId);
    },
    async remove(tabId, session) {
      if (bindings.get(tabId) === session) bindings.delete(tabId);
    },
  };
}

const result: TabEventRecord = { code: 'c1', signedAt: 0, event: { type: 'SignatureReceived', data: { Purpose: 'before the restart' } } };

describe('TabRegistry through an outage', () => {
  it('a tab new here whose replay of results failed still gets them when its Register is tried again', async () => {
    const { hub, clock } = makeHub();
    let recentDown = true;
    const registry = new TabRegistry(
      {
        tabs: tabStore() as TabStore,
        codes: {
          recentTabEvents: async () => {
            if (recentDown) throw storeUnavailable(new Error('Connection terminated unexpectedly'));
            return [result];
          },
        },
        writtenResults: { writtenAmong: async () => new Set<string>() },
        hub,
        clock,
      },
      { resultReplayMs: 60_000, registrationWaitMs: 100, tabIdleMs: 60_000 },
    );
    const connection = new FakeConnection();
    // The store went away between the binding and the replay: the Register fails as an outage ...
    await expect(registry.register(A.tabId, A.session, connection, 'http://127.0.0.1/')).rejects.toMatchObject({ code: 'store_unavailable' });
    // ... and its retry finds the tab attached already ("attached", not "created"), yet replays.
    recentDown = false;
    expect(await registry.register(A.tabId, A.session, connection, 'http://127.0.0.1/')).toBe('ok');
    await tick();
    expect(connection.frames.map((f) => f.type)).toEqual(['SignatureReceived']);
    // Owed once: a third Register replays nothing more.
    expect(await registry.register(A.tabId, A.session, connection, 'http://127.0.0.1/')).toBe('ok');
    await tick();
    expect(connection.frames).toHaveLength(1);
  });

  it('classifies the broker\'s errors that mean "unreachable" as shared_state_unavailable, and leaves others alone', async () => {
    const { hub, clock } = makeHub();
    let failure: Error | undefined = new Error('Command timed out');
    hub.holds = async () => {
      if (failure) throw failure;
      return true;
    };
    const registry = new TabRegistry(
      {
        tabs: tabStore() as TabStore,
        codes: { recentTabEvents: async () => [] },
        writtenResults: { writtenAmong: async () => new Set<string>() },
        hub,
        clock,
        sharedUnavailable: (err) => err instanceof Error && err.message === 'Command timed out',
      },
      { resultReplayMs: 60_000, registrationWaitMs: 100, tabIdleMs: 60_000 },
    );
    await expect(registry.holds(A)).rejects.toMatchObject({ code: 'shared_state_unavailable', extra: { retryAfter: 1 } });
    failure = new TypeError('a bug');
    await expect(registry.holds(A)).rejects.toBe(failure);
    failure = undefined;
    expect(await registry.holds(A)).toBe(true);
  });
});
