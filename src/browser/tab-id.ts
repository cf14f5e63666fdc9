import { TAB_ID_PATTERN } from '../protocol/frames.js';

/**
 * Where the tab ID lives between page loads. The browser keeps it in `window.name`, which
 * survives reloads and same-tab navigation but is not shared with other tabs (unlike
 * localStorage), so each tab keeps its own ID (docs/events.md "What a reference page can be answered").
 */
export interface TabIdStore {
  read(): string | undefined;
  write(tabId: string): void;
}

/** A store over anything with a writable `name`, i.e. `window`. */
export function windowNameStore(target: { name: string }): TabIdStore {
  return {
    read: () => target.name,
    write: (tabId) => {
      target.name = tabId;
    },
  };
}

/** Sources of randomness for new IDs; `crypto` in a browser. */
export interface RandomSource {
  randomUUID?: () => string;
  getRandomValues(bytes: Uint8Array): Uint8Array;
}

/**
 * A new RFC 9562 version-4 GUID. `crypto.randomUUID` exists only in secure contexts, so an
 * http page on a non-localhost host builds the same format from `getRandomValues`, which does not.
 */
export function newGuid(random: RandomSource): string {
  if (typeof random.randomUUID === 'function') return random.randomUUID();
  const b = random.getRandomValues(new Uint8Array(16));
  b[6] = (b[6]! & 0x0f) | 0x40; // version 4
  b[8] = (b[8]! & 0x3f) | 0x80; // variant 10xx
  const hex = Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** The stored ID when it is a valid tab ID (the service's own pattern), else a new one, stored. */
export function resolveTabId(store: TabIdStore, newId: () => string): string {
  const stored = store.read();
  if (stored !== undefined && TAB_ID_PATTERN.test(stored)) return stored;
  return renewTabId(store, newId);
}

/** A fresh ID, stored; used when the service says the old one belongs to another session. */
export function renewTabId(store: TabIdStore, newId: () => string): string {
  const id = newId();
  store.write(id);
  return id;
}
