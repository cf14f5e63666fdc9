import { describe, expect, it } from 'vitest';
import { TimedProbe } from '../../src/health/timed-probe.js';

/** A server the test answers by hand: each check waits until the test answers it (or never). */
function server() {
  const pending: (() => void)[] = [];
  let checks = 0;
  return {
    check: () => {
      checks++;
      return new Promise<void>((resolve) => pending.push(resolve));
    },
    answerAll: () => pending.splice(0).forEach((answer) => answer()),
    get checks() {
      return checks;
    },
  };
}

describe('TimedProbe: readiness by asking, with a deadline', () => {
  it('up when the server answers within the deadline; the answer is kept for cacheMs and shared by callers meanwhile', async () => {
    let now = 0;
    const probe = new TimedProbe({ check: async () => undefined, now: () => now }, { deadlineMs: 1_000, cacheMs: 1_000 });
    expect(await probe.up()).toBe(true);
    now = 999;
    expect(await probe.up()).toBe(true);
  });

  it('a stalled server is down at the deadline; no second command is sent while the first is unanswered; up again once it answers', async () => {
    let now = 0;
    const stalled = server();
    const probe = new TimedProbe({ check: stalled.check, now: () => now }, { deadlineMs: 20, cacheMs: 1_000 });
    const [a, b] = await Promise.all([probe.up(), probe.up()]);
    expect([a, b]).toEqual([false, false]);
    expect(stalled.checks).toBe(1);
    now = 5_000;
    expect(await probe.up()).toBe(false);
    expect(stalled.checks).toBe(1);
    // SIGCONT: the server answers what it was sent; the next probe asks again and is answered.
    stalled.answerAll();
    await new Promise((resolve) => setImmediate(resolve));
    now = 10_000;
    const again = probe.up();
    stalled.answerAll();
    expect(await again).toBe(true);
    expect(stalled.checks).toBe(2);
  });

  it('a check that fails (connection refused) is down at once, and asked again after cacheMs', async () => {
    let now = 0;
    let fail = true;
    const probe = new TimedProbe({ check: async () => (fail ? Promise.reject(new Error('ECONNREFUSED')) : undefined), now: () => now }, { deadlineMs: 60_000, cacheMs: 1_000 });
    expect(await probe.up()).toBe(false);
    fail = false;
    expect(await probe.up()).toBe(false);
    now = 1_000;
    expect(await probe.up()).toBe(true);
  });
});
