import { describe, expect, it } from 'vitest';
import { createApiKey, isValidApiKey } from '../../src/agent/api-keys.js';
import { parseFlags } from '../../src/cli/args.js';
import { ManualClock } from '../../src/clock.js';
import { BACKENDS, useStores } from '../helpers/backends.js';

// `tabwire apikey revoke <id>` takes the id as an operand: an id starting with "-" would be read as a flag.
// The ids used to be the stored hash's base64url, which starts with "-" for one key in 64.
describe('API key ids', () => {
  const stores = useStores(BACKENDS.find((b) => b.name === 'sqlite')!);

  it('are 16 hex digits, never a flag to the CLI, and revoke the key they name', async () => {
    const clock = new ManualClock(1_700_000_000_000);
    const created = [];
    for (let i = 0; i < 300; i++) created.push(await createApiKey(stores.store.apiKeys, clock, `key ${i}`));
    for (const { id } of created) {
      expect(id).toMatch(/^[0-9a-f]{16}$/);
      expect(parseFlags('apikey', [], ['revoke', id]).positionals).toEqual(['revoke', id]);
    }
    expect(new Set(created.map((c) => c.id)).size).toBe(300);
    expect((await stores.store.apiKeys.list()).map((k) => k.id).sort()).toEqual(created.map((c) => c.id).sort());

    const [first, second] = created;
    expect(await stores.store.apiKeys.revoke(first!.id, clock.now())).toBe(true);
    expect(await isValidApiKey(stores.store.apiKeys, first!.key)).toBe(false);
    expect(await isValidApiKey(stores.store.apiKeys, second!.key)).toBe(true);
  });
});
