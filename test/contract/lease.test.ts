import { pino } from 'pino';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { createPurgeRunner } from '../../src/wiring/retention.js';
import { createLeases } from '../../src/wiring/shared.js';
import { LeaderRunner } from '../../src/lease/leader.js';
import type { Lease } from '../../src/lease/lease.js';
import { MemoryLeaseTable } from '../../src/lease/memory-lease.js';
import { RedisLease } from '../../src/lease/redis-lease.js';
import type { RedisConnection } from '../../src/redis/connection.js';
import { testConnection, testPrefix } from '../helpers/redis.js';
import { stateBackends, twoNodes } from '../helpers/state-backends.js';
import { until } from '../helpers/until.js';

const silent = pino({ level: 'silent' });

const connections: RedisConnection[] = [];
afterAll(async () => {
  await Promise.all(connections.map((c) => c.close()));
});

const backends = stateBackends<Lease, number>('lease', {
  memory: (ttlMs) => {
    const table = new MemoryLeaseTable();
    return (nodeId) => table.lease('job', nodeId, ttlMs);
  },
  redis: (redis, nodeId, ttlMs) => new RedisLease(redis, 'job', nodeId, ttlMs),
});

describe.each(backends)('Lease contract: $name', (backend) => {
  /** The same lease as seen by two holders (two nodes). */
  const pair = (ttlMs: number) => twoNodes(backend, ttlMs);

  it('one holder at a time; acquiring again as the holder extends the same hold', async () => {
    const { a, b } = pair(60_000);
    const token = await a.acquire();
    expect(token).toBeTypeOf('number');
    expect(await b.acquire()).toBeUndefined();
    expect(await a.acquire()).toBe(token);
    expect(await b.current()).toEqual({ holder: 'node-a', token });
  });

  it('only the holder renews or releases; a release frees the lease and the next hold has a greater token', async () => {
    const { a, b } = pair(60_000);
    const first = (await a.acquire())!;
    expect(await a.renew(first)).toBe(true);
    expect(await b.renew(first)).toBe(false);
    expect(await b.release(first)).toBe(false);
    expect(await a.renew(first + 1)).toBe(false);
    expect(await a.release(first)).toBe(true);
    expect(await a.current()).toBeUndefined();
    const second = (await b.acquire())!;
    expect(second).toBeGreaterThan(first);
  });

  it('fail-over: a holder that stops renewing loses the lease after the TTL; the stale holder can neither renew nor release the new hold', async () => {
    const { a, b } = pair(300);
    const stale = (await a.acquire())!;
    expect(await b.acquire()).toBeUndefined();
    let fresh: number | undefined;
    await until(async () => (fresh = await b.acquire()) !== undefined, 'the other holder to take the lease after the TTL');
    expect(fresh!).toBeGreaterThan(stale);
    expect(await a.renew(stale)).toBe(false);
    expect(await a.release(stale)).toBe(false);
    expect(await a.current()).toEqual({ holder: 'node-b', token: fresh });
    expect(await a.acquire()).toBeUndefined();
  });

  it('LeaderRunner: exactly one of two runners leads, renewing past the TTL; when it stops, the other takes over and the work never overlaps', async () => {
    const { a, b } = pair(600);
    const running = new Set<string>();
    const led: string[] = [];
    let overlap = false;
    let renewals = 0;
    const counted: Lease = { name: a.name, holder: a.holder, ttlMs: a.ttlMs, scope: a.scope, acquire: () => a.acquire(), release: (t) => a.release(t), current: () => a.current(), renew: async (t) => (await a.renew(t)) && ++renewals > 0 };
    const runner = (lease: Lease) =>
      new LeaderRunner({
        lease,
        log: silent,
        renewEveryMs: 100,
        retryEveryMs: 50,
        lead: () => {
          if (running.size > 0) overlap = true;
          running.add(lease.holder);
          led.push(lease.holder);
          return async () => void running.delete(lease.holder);
        },
      });
    const [ra, rb] = [runner(counted), runner(b)];
    ra.start();
    await until(() => ra.leading, 'the first runner to lead');
    const token = (await a.current())!.token;
    rb.start();
    // Renewals counted, not time slept: 10 renewals every 100 ms outlast the 600 ms TTL several times.
    await until(() => renewals >= 10, 'ten renewals by the holder');
    expect(led).toEqual(['node-a']);
    expect(await b.current()).toEqual({ holder: 'node-a', token });
    await ra.stop();
    await until(() => rb.leading, 'the second runner to take over');
    expect(led).toEqual(['node-a', 'node-b']);
    expect(overlap).toBe(false);
    await rb.stop();
    expect(running.size).toBe(0);
    expect(await a.current()).toBeUndefined();
  });
});

/** A lease whose renewals can be made to answer false (taken away) or fail (store unreachable). */
function controllable(lease: Lease) {
  const control = { renew: 'ok' as 'ok' | 'lost' | 'error', lastRenewedAt: 0 };
  const wrapped: Lease = {
    name: lease.name,
    holder: lease.holder,
    ttlMs: lease.ttlMs,
    scope: lease.scope,
    acquire: async () => {
      const token = await lease.acquire();
      if (token !== undefined) control.lastRenewedAt = performance.now();
      return token;
    },
    renew: async (token) => {
      if (control.renew === 'lost') return false;
      if (control.renew === 'error') throw new Error('store unreachable');
      control.lastRenewedAt = performance.now();
      return lease.renew(token);
    },
    release: (token) => lease.release(token),
    current: () => lease.current(),
  };
  return { lease: wrapped, control };
}

describe('LeaderRunner stepping down', () => {
  it('stops the work at once when a renewal says the hold is over', async () => {
    const { lease, control } = controllable(new MemoryLeaseTable().lease('job', 'node-a', 60_000));
    let working = false;
    const runner = new LeaderRunner({ lease, log: silent, renewEveryMs: 50, retryEveryMs: 60_000, lead: () => ((working = true), async () => void (working = false)) });
    runner.start();
    await until(() => working, 'the work to start');
    control.renew = 'lost';
    await until(() => !working && !runner.leading, 'the work to stop');
    await runner.stop();
  });

  it('stops the work before the hold could end when renewals keep failing (store unreachable)', async () => {
    const ttlMs = 3_000;
    const { lease, control } = controllable(new MemoryLeaseTable().lease('job', 'node-a', ttlMs));
    let stoppedAt: number | undefined;
    const runner = new LeaderRunner({
      lease,
      log: silent,
      renewEveryMs: 1_000,
      lead: () => async () => void (stoppedAt = performance.now()),
    });
    runner.start();
    await until(() => runner.leading, 'the runner to lead');
    control.renew = 'error';
    await until(() => stoppedAt !== undefined, 'the work to stop', 20_000);
    // The hold was certainly ours until the last good renewal + TTL; the work stopped before that.
    expect(stoppedAt! - control.lastRenewedAt).toBeLessThan(ttlMs);
    await runner.stop();
  });
});

describe('once-per-cluster jobs', () => {
  it('the retention purge of two nodes on one Redis runs on one node; when that node stops, on the other', async () => {
    const prefix = testPrefix('purge');
    const running: string[] = [];
    const nodes = ['node-a', 'node-b'].map((nodeId) => {
      const redis = testConnection(inject('redisUrl'), prefix);
      connections.push(redis);
      const purge = { start: () => void running.push(nodeId), stop: async () => void running.splice(running.indexOf(nodeId), 1) };
      return createPurgeRunner({ leases: createLeases({ redis, nodeId }), log: silent }, { purge, intervalMs: 60_000 });
    });
    nodes.forEach((n) => n.start());
    await until(() => running.length === 1, 'one node to run the purge');
    const first = running[0];
    await nodes[first === 'node-a' ? 0 : 1]!.stop();
    await until(() => running.length === 1 && running[0] !== first, 'the other node to run it');
    await Promise.all(nodes.map((n) => n.stop()));
    expect(running).toEqual([]);
  });
});
