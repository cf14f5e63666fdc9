import { webcrypto } from 'node:crypto';
import { describe, expect, it, vi } from 'vitest';
import { newGuid, renewTabId, resolveTabId, windowNameStore } from '../../src/browser/tab-id.js';
import { TAB_ID_PATTERN } from '../../src/protocol/frames.js';

const GUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('tab ID in window.name', () => {
  it('reuses a window.name that is already a valid tab ID (a reload of the same tab)', () => {
    const win = { name: '0f8fad5b-d9cb-469f-a165-70867728950e' };
    const newId = vi.fn(() => 'never-used');
    expect(resolveTabId(windowNameStore(win), newId)).toBe('0f8fad5b-d9cb-469f-a165-70867728950e');
    expect(newId).not.toHaveBeenCalled();
  });

  it.each(['', 'short', 'has spaces in it', 'x'.repeat(65), 'tab/with/slashes', 'javascript:alert(1)'])(
    'replaces window.name %j with a new ID and stores it',
    (name) => {
      const win = { name };
      const id = resolveTabId(windowNameStore(win), () => newGuid(webcrypto));
      expect(id).toMatch(GUID_V4);
      expect(win.name).toBe(id);
    },
  );

  it('renews: a new ID replaces the stored one', () => {
    const win = { name: 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa' };
    expect(renewTabId(windowNameStore(win), () => 'bbbbbbbb-new')).toBe('bbbbbbbb-new');
    expect(win.name).toBe('bbbbbbbb-new');
  });
});

describe('newGuid', () => {
  it('uses crypto.randomUUID when there is one', () => {
    expect(newGuid({ randomUUID: () => 'from-random-uuid', getRandomValues: (b) => b })).toBe('from-random-uuid');
  });

  it('builds a version-4 GUID from getRandomValues outside secure contexts (no randomUUID)', () => {
    const ids = new Set<string>();
    for (let i = 0; i < 100; i++) {
      const id = newGuid({ getRandomValues: (b) => webcrypto.getRandomValues(b) });
      expect(id).toMatch(GUID_V4);
      expect(id).toMatch(TAB_ID_PATTERN);
      ids.add(id);
    }
    expect(ids.size).toBe(100);
  });

  it('sets the version and variant bits whatever the random bytes are', () => {
    expect(newGuid({ getRandomValues: (b) => b.fill(0xff) })).toBe('ffffffff-ffff-4fff-bfff-ffffffffffff');
    expect(newGuid({ getRandomValues: (b) => b.fill(0) })).toBe('00000000-0000-4000-8000-000000000000');
  });
});
