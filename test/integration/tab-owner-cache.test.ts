import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { MemoryBroker } from '../../src/broker/memory-broker.js';
import { ManualClock } from '../../src/clock.js';
import { Hub } from '../../src/hub/hub.js';
import { TabRegistry } from '../../src/hub/registry.js';
import { openSqliteStore } from '../../src/store/sqlite/open.js';
import type { Store } from '../../src/store/stores.js';

/** The owner of a tab is asked of the store once per 2 s, not on every QR request (docs/events.md "QR requests and the tab"). */
const dir = mkdtempSync(join(tmpdir(), 'tabwire-owner-cache-'));
let store: Store;
beforeAll(async () => {
  store = await openSqliteStore(join(dir, 'store.sqlite'));
});
afterAll(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A registry on its own hub whose owner look-ups in the store are counted. */
function counted(): { clock: ManualClock; registry: TabRegistry; lookups: () => number } {
  const clock = new ManualClock();
  let lookups = 0;
  const tabs = Object.assign(Object.create(store.tabs) as Store['tabs'], {
    sessionOf: (tabId: string) => {
      lookups++;
      return store.tabs.sessionOf(tabId);
    },
  });
  const broker = new MemoryBroker({ limit: 100, maxAgeMs: 60_000, presenceTtlMs: 1e12, idleStreamMs: 60_000 });
  const hub = new Hub({ broker, clock, log: pino({ level: 'silent' }), onFallback: () => undefined }, { node: 'n', presenceTtlMs: 1e12, outboxMaxAgeMs: 60_000, tabIdleMs: 60_000, longPollGapMs: 10_000, maxTabsPerSession: 100 });
  const registry = new TabRegistry({ tabs, codes: store.codes, writtenResults: store.writtenResults, hub, clock }, { resultReplayMs: 60_000, registrationWaitMs: 100, tabIdleMs: 60_000 });
  return { clock, registry, lookups: () => lookups };
}

it('looks a tab owner up once per 2 s, and forgets it with the binding', async () => {
  const { clock, registry, lookups } = counted();
  await store.tabs.bind('tab-00000042', 'session-a', clock.now(), null);

  const address = await registry.requireOwner('tab-00000042', 'session-a', { bindIfFree: false });
  expect(address).toEqual({ tabId: 'tab-00000042', session: 'session-a' });
  await registry.requireOwner('tab-00000042', 'session-a', { bindIfFree: false });
  await expect(registry.requireOwner('tab-00000042', 'session-b', { bindIfFree: false })).rejects.toMatchObject({ code: 'tab_session_mismatch' });
  expect(lookups()).toBe(1);

  clock.advance(2_000);
  await registry.requireOwner('tab-00000042', 'session-a', { bindIfFree: false });
  expect(lookups()).toBe(2);

  await registry.removeBinding(address);
  await expect(registry.requireOwner('tab-00000042', 'session-a', { bindIfFree: false })).rejects.toMatchObject({ code: 'tab_not_registered' });
  // Bound by a QR request of another session now: that session owns it at once.
  expect(await registry.requireOwner('tab-00000042', 'session-b', { bindIfFree: true, origin: null })).toEqual({ tabId: 'tab-00000042', session: 'session-b' });
});

it('asks the store nothing for a tab this node holds for the caller, and asks again once it let the tab go', async () => {
  const { clock, registry, lookups } = counted();
  const connection = { transport: 'websocket' as const, open: true, send: () => true, close: () => undefined };
  expect(await registry.register('tab-00000077', 'session-a', connection, 'http://127.0.0.1/')).toBe('ok');

  // A page refreshing its code every 2 s, for a minute: the tab is held here, so no look-up at all.
  for (let i = 0; i < 30; i++) {
    clock.advance(2_050);
    expect(await registry.requireOwner('tab-00000077', 'session-a', { bindIfFree: false })).toEqual({ tabId: 'tab-00000077', session: 'session-a' });
  }
  expect(lookups()).toBe(0);
  // Another session is still refused, from the stored binding.
  await expect(registry.requireOwner('tab-00000077', 'session-b', { bindIfFree: true, origin: null })).rejects.toMatchObject({ code: 'tab_session_mismatch' });

  await registry.unregister({ tabId: 'tab-00000077', session: 'session-a' });
  clock.advance(2_050);
  // Let go here: the store decides again (the binding went with the Unregister).
  const before = lookups();
  await expect(registry.requireOwner('tab-00000077', 'session-a', { bindIfFree: false })).rejects.toMatchObject({ code: 'tab_not_registered' });
  expect(lookups()).toBe(before + 1);
});
