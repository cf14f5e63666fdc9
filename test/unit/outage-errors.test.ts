import { describe, expect, it } from 'vitest';
import { retryThroughOutage } from '../../src/hub/outage-wait.js';
import { isOutage, sharedStateUnavailable, TabwireError } from '../../src/errors.js';
import { redisUnavailable } from '../../src/redis/errors.js';
import { storeUnavailable } from '../../src/store/sql/guarded-dialect.js';

// What counts as an outage (503 with Retry-After, close 1013; docs/errors.md "Outages"), and how the
// channel waits through one before it answers.

const coded = (code: string, message = 'x') => Object.assign(new Error(message), { code });

describe('outage errors', () => {
  it('the store and shared state refusals are outages; other 503s and everything else are not', () => {
    expect(isOutage(storeUnavailable(new Error('down')))).toBe(true);
    expect(isOutage(sharedStateUnavailable(new Error('down')))).toBe(true);
    expect(sharedStateUnavailable(undefined).extra).toEqual({ retryAfter: 1 });
    expect(isOutage(new TabwireError('shutting_down'))).toBe(false);
    expect(isOutage(new TabwireError('internal_error'))).toBe(false);
    expect(isOutage(coded('ECONNREFUSED'))).toBe(false); // unclassified driver errors stay faults
  });

  it('Redis: unreachable, timed out, queue flushed, closed, loading, failing over, a Cluster\'s redirection handed back', () => {
    const maxRetries = Object.assign(new Error('Reached the max retries per request limit (which is 1). Refer to "maxRetriesPerRequest" option for details.'), {
      name: 'MaxRetriesPerRequestError',
    });
    for (const err of [
      coded('ECONNREFUSED'),
      coded('ECONNRESET'),
      new Error('Command timed out'),
      maxRetries,
      new Error('Connection is closed.'),
      new Error("Stream isn't writeable and enableOfflineQueue options is false"),
      new Error('LOADING Redis is loading the dataset in memory'),
      new Error('READONLY You can\'t write against a read only replica.'),
      new Error('CLUSTERDOWN The cluster is down'),
      new Error('MOVED 8166 127.0.0.1:36771'),
      new Error('ASK 8166 127.0.0.1:36771'),
      new Error('TRYAGAIN Multiple keys request during rehashing of slot'),
      new AggregateError([coded('ECONNREFUSED')], 'connect'),
    ]) {
      expect(redisUnavailable(err), err.message).toBe(true);
    }
  });

  it('Redis: a script error, a wrong type or a bug is not an outage', () => {
    for (const err of [
      new Error('ERR Error running script (call to f_x): @user_script:1: bad'),
      new Error('WRONGTYPE Operation against a key holding the wrong kind of value'),
      new TypeError("Cannot read properties of undefined (reading 'x')"),
      'text',
      undefined,
    ]) {
      expect(redisUnavailable(err)).toBe(false);
    }
  });
});

describe('retryThroughOutage', () => {
  const outage = () => storeUnavailable(coded('ECONNREFUSED'));

  it('tries again while the step fails with an outage, and resolves once it succeeds', async () => {
    let tries = 0;
    const result = await retryThroughOutage(
      async () => {
        if (++tries < 3) throw outage();
        return 'ok';
      },
      { deadline: performance.now() + 60_000, wanted: () => true },
    );
    expect(result).toBe('ok');
    expect(tries).toBe(3);
  });

  it('throws any other error at once', async () => {
    let tries = 0;
    const bug = new TypeError('bug');
    await expect(
      retryThroughOutage(
        async () => {
          tries++;
          throw bug;
        },
        { deadline: performance.now() + 60_000, wanted: () => true },
      ),
    ).rejects.toBe(bug);
    expect(tries).toBe(1);
  });

  it('throws the outage once the deadline has passed, after a last try at the deadline', async () => {
    let tries = 0;
    const started = performance.now();
    const err = outage();
    await expect(
      retryThroughOutage(
        async () => {
          tries++;
          throw err;
        },
        { deadline: started + 300, wanted: () => true },
      ),
    ).rejects.toBe(err);
    expect(performance.now() - started).toBeGreaterThanOrEqual(299);
    expect(tries).toBeGreaterThanOrEqual(2);
  });

  it('stops trying once nobody wants the answer (the socket closed)', async () => {
    let tries = 0;
    let wanted = true;
    await expect(
      retryThroughOutage(
        async () => {
          tries++;
          wanted = false;
          throw outage();
        },
        { deadline: performance.now() + 60_000, wanted: () => wanted },
      ),
    ).rejects.toMatchObject({ code: 'store_unavailable' });
    expect(tries).toBe(1);
  });
});
