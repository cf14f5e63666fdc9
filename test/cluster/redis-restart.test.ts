import { randomInt, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventFrame } from '../../src/protocol/frames.js';
import { Cluster } from '../helpers/cluster.js';
import { LongPollPage, purposeOf, settleCode, type PageSession } from '../helpers/cluster-flows.js';
import { TestTab } from '../helpers/tab.js';
import { until } from '../helpers/until.js';

/**
 * Redis restarted (everything in it lost) while logins keep coming, for a page on a WebSocket (node 1) and a
 * page long-polling each node in turn. What the test holds the cluster to (docs/deployment.md "What is lost"):
 * - it recovers by itself: results settled once Redis is back reach both pages, with no step by anyone;
 * - loss bound: a result settled before or during the restart either reaches its page, or the page is told
 *   `EventsLost` (its stream was made again); never a silent gap;
 * - ids only grow at each page (the new streams number above the old ones), so de-duplication by id holds;
 * - a page that hears nothing after the restart (a third page, quiet) is told EventsLost by its node's next
 *   presence refresh (every 10 s), and the results of its session's recent codes reach it again (the replay).
 */
let cluster: Cluster;

beforeAll(async () => {
  cluster = await Cluster.start({ nodes: 3, env: { TABWIRE_QR_REQUESTS_PER_SESSION_PER_MINUTE: '10000', TABWIRE_LONG_POLL_HOLD_SECONDS: '2' } });
}, 120_000);
afterAll(async () => cluster?.stop());

interface Settled {
  purpose: string;
  page: 'ws' | 'poll';
  phase: 'before' | 'during' | 'after';
}

const resultsOf = (frames: readonly EventFrame[]) => frames.filter((f) => f.type === 'SignatureReceived').map(purposeOf);
const increasing = (ids: number[]) => ids.every((id, n) => n === 0 || id > ids[n - 1]!);

describe('Redis restarted during steady traffic', () => {
  it('the cluster recovers by itself; every result settled before or during the restart arrives or its page is told EventsLost', async () => {
    const ws = await TestTab.open(cluster.wsUrl(0));
    await ws.next('CheckServerInstance');
    let turn = 0;
    const poll = new LongPollPage(() => cluster.url(turn++ % 3), randomUUID());
    expect(await poll.poll()).toBe(200);
    poll.start();
    const pages: Record<Settled['page'], PageSession> = { ws, poll: poll.page };
    // The quiet page (WebSocket on node 2): two results before the restart, nothing after.
    const quiet = await TestTab.open(cluster.wsUrl(1));
    await quiet.next('CheckServerInstance');
    for (const purpose of ['quiet 1', 'quiet 2']) await settleCode({ qrBase: cluster.url(2), signBase: cluster.url(0), page: quiet, purpose, decision: 'approve' });
    await until(() => resultsOf(quiet.events).length === 2, 'the quiet page’s results');

    let phase: Settled['phase'] = 'before';
    const settled: Settled[] = [];
    const failures: string[] = [];
    let stopping = false;
    let n = 0;
    // Two logins at a time, each to one of the pages, QR request and approval on random nodes.
    const traffic = Array.from({ length: 2 }, async () => {
      while (!stopping) {
        const page = n % 2 === 0 ? 'ws' : 'poll';
        const purpose = `login ${n++}`;
        const started = phase;
        try {
          await settleCode({ qrBase: cluster.url(randomInt(3)), signBase: cluster.url(randomInt(3)), page: pages[page], purpose, decision: 'approve' });
          // A login that began before the restart ended and settled after it counts as "during".
          settled.push({ purpose, page, phase: started === 'after' && phase === 'after' ? 'after' : started === 'before' && phase === 'before' ? 'before' : 'during' });
        } catch (err) {
          failures.push(`${purpose} (${started}): ${String(err)}`);
        }
      }
    });
    const count = (p: Settled['phase']) => settled.filter((s) => s.phase === p).length;

    await until(() => count('before') >= 20, 'logins before the restart');
    phase = 'during';
    await cluster.redis.restart();
    phase = 'after';
    await until(() => count('after') >= 30, 'logins after the restart', 60_000);
    stopping = true;
    await Promise.all(traffic);

    const received = { ws: () => resultsOf(ws.events), poll: () => resultsOf(poll.frames) };
    const lost = { ws: () => ws.events.some((e) => e.type === 'EventsLost'), poll: () => poll.frames.some((e) => e.type === 'EventsLost') };
    // Recovery: everything settled after the restart reaches its page, without anyone doing anything.
    await until(
      () => settled.filter((s) => s.phase === 'after').every((s) => received[s.page]().includes(s.purpose)),
      'the results settled after the restart at their pages',
      60_000,
    );
    // The loss bound.
    for (const s of settled.filter((x) => x.phase !== 'after')) {
      expect(received[s.page]().includes(s.purpose) || lost[s.page](), `${s.purpose} (${s.phase}) on the ${s.page} page`).toBe(true);
    }
    // Ids only grow; each page got every result at most once unless it was told EventsLost (a replay may repeat one).
    expect(increasing(ws.events.filter((e) => typeof e.id === 'number').map((e) => e.id))).toBe(true);
    expect(increasing(poll.ids())).toBe(true);
    for (const page of ['ws', 'poll'] as const) {
      const all = received[page]();
      if (!lost[page]()) expect(new Set(all).size).toBe(all.length);
    }
    // The replay: the quiet page is told, then gets its session's results again (new ids, above the old).
    await until(() => quiet.events.some((e) => e.type === 'EventsLost'), 'EventsLost at the quiet page', 30_000);
    await until(() => resultsOf(quiet.events).length >= 4, 'the replayed results at the quiet page', 30_000);
    expect(quiet.events.map((e) => (e.type === 'EventsLost' ? 'lost' : purposeOf(e)))).toEqual(['quiet 1', 'quiet 2', 'lost', 'quiet 1', 'quiet 2']);
    expect(increasing(quiet.events.filter((e) => typeof e.id === 'number').map((e) => e.id))).toBe(true);
    await poll.stop();
    ws.close();
    quiet.close();
    // What happened, for the record of this run (docs/deployment.md quotes the bound, not these numbers).
    console.info(
      `redis restart: settled ${settled.length} (before ${count('before')}, during ${count('during')}, after ${count('after')}); ` +
        `failed requests ${failures.length}; EventsLost ws=${lost.ws()} poll=${lost.poll()}; ` +
        `missing ws=${settled.filter((s) => s.page === 'ws' && !received.ws().includes(s.purpose)).length} ` +
        `poll=${settled.filter((s) => s.page === 'poll' && !received.poll().includes(s.purpose)).length}; poll failures ${poll.failures.length}`,
    );
    expect(failures).toEqual([]);
  }, 150_000);
});
