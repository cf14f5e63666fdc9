import { describe, expect, it } from 'vitest';
import { PublishRetry } from '../../src/hub/publish-retry.js';
import type { TabEvent } from '../../src/protocol/frames.js';

const tab = { tabId: 't1', session: 's1' };
const result = (n: number): TabEvent => ({ type: 'SignatureReceived', data: { n } });

/**
 * The broker is a function here that refuses while "down": what matters is how many tries the held events
 * make once it is back. A result offered again at every outbox sweep during an outage must be tried once
 * after it, or a try that comes after the stream trimmed the first copy appends it again (a doubled login).
 */
describe('PublishRetry', () => {
  const setUp = () => {
    let down = true;
    const tries: string[] = [];
    let givenUp = 0;
    const retry = new PublishRetry(
      {
        publish: async (_to, _event, key) => {
          tries.push(key);
          if (down) throw new Error('broker unreachable');
        },
        now: () => 0,
        onGivenUp: (n) => (givenUp += n),
      },
      { maxAgeMs: 60_000, limit: 100 },
    );
    return { retry, tries, up: () => (down = false), givenUp: () => givenUp };
  };

  it('holds one copy of an event offered again under the same key, and tries it once when the broker is back', async () => {
    const { retry, tries, up } = setUp();
    const taken: string[] = [];
    for (let sweep = 0; sweep < 6; sweep++) {
      retry.add(tab, result(1), 'r-one', () => taken.push(`one@${sweep}`));
      retry.add(tab, result(2), 'r-two');
    }
    expect(retry.pending).toBe(2);
    await retry.retry();
    expect(tries).toEqual(['r-one']);
    up();
    await retry.retry();
    expect(tries).toEqual(['r-one', 'r-one', 'r-two']);
    expect(retry.pending).toBe(0);
    // Every sweep's mark is told once, after the one try that landed.
    expect(taken).toEqual(['one@0', 'one@1', 'one@2', 'one@3', 'one@4', 'one@5']);
  });

  it('holds an event again once its held copy landed, and keeps order per tab', async () => {
    const { retry, tries, up } = setUp();
    retry.add(tab, result(1), 'a');
    retry.add(tab, result(2), 'b');
    up();
    await retry.retry();
    retry.add(tab, result(1), 'a');
    await retry.retry();
    expect(tries).toEqual(['a', 'b', 'a']);
  });

  it('gives up beyond its limit without counting a repeated key against it', async () => {
    const { retry, givenUp } = setUp();
    for (let i = 0; i < 100; i++) retry.add(tab, result(i), `k${i}`);
    retry.add(tab, result(0), 'k0');
    expect(givenUp()).toBe(0);
    retry.add(tab, result(100), 'k100');
    expect(givenUp()).toBe(1);
    expect(retry.pending).toBe(100);
  });
});
