import { vi } from 'vitest';
import { EventClient, type EventClientDeps } from '../../src/browser/client.js';
import type { Timers } from '../../src/browser/platform.js';

// The page around the browser event client in its unit tests (test/unit/browser-*.test.ts), which run it on
// vitest's fake timers with fake transports.

/** The global timers, so `vi.useFakeTimers()` drives them. */
export const timers: Timers = {
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

/**
 * An EventClient in a fake page at https://shop.example/login: window.name is a string (`windowName` reads
 * it), tab IDs are tab-0001-guid, tab-0002-guid, …, the log is spies, and each backoff waits the whole of its
 * window (random 0.999999). `deps` gives the host and the transports, and may replace any of these.
 */
export function pageClient(deps: Partial<EventClientDeps> & Pick<EventClientDeps, 'defaultHost'>) {
  let name = '';
  let n = 0;
  const log = { warn: vi.fn(), error: vi.fn() };
  const client = new EventClient({
    tabIdStore: { read: () => name, write: (id) => void (name = id) },
    newTabId: () => `tab-${String(++n).padStart(4, '0')}-guid`,
    location: () => 'https://shop.example/login',
    timers,
    log,
    backoff: { random: () => 0.999999 },
    ...deps,
  });
  return { client, log, windowName: () => name };
}
