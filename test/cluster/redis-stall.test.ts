import { randomInt, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventFrame } from '../../src/protocol/frames.js';
import { Cluster } from '../helpers/cluster.js';
import { createSigner, LongPollPage, type PageSession, purposeOf, settleCode, type Signer } from '../helpers/cluster-flows.js';
import { TestTab } from '../helpers/tab.js';
import { until } from '../helpers/until.js';

/**
 * Redis stalls (SIGSTOP: connections stay open, nothing is answered) for 5 s and then for 12 s while logins
 * flow to a WebSocket page (node 1) and a page long-polling each node in turn. A publish that timed out
 * during the stall runs when Redis resumes, and its retry must not append a copy under a new id
 * (docs/redis.md "Outages"). What the test holds the cluster to:
 * - /readyz is not ready during the stall (a timed probe), and ready again after SIGCONT;
 * - every login whose signature was answered 200 reaches its page (0 lost);
 * - each result reaches its page under one id only, so a page that drops ids it saw (as /Events.js does)
 *   shows each once (0 duplicates).
 * Logins whose requests failed during the stall are not counted: their codes were never settled.
 *
 * The logins run as fast as the machine allows, and signatures keep being answered during a stall (their
 * results held by the nodes), so on a fast machine a page gets a burst of a thousand results or more the
 * moment Redis resumes. A tab's stream keeps `outboxLimit` events (100 by default), and a page that gets more
 * than that at once is told `EventsLost` for the oldest by design (docs/events.md "Limits"). That bound is not
 * what this test is about: the streams here keep OUTBOX_LIMIT events, and a test below checks that no page was
 * told `EventsLost`, so a burst beyond it fails as what it is.
 */
const OUTBOX_LIMIT = 10_000;
let cluster: Cluster;
let dir: string;
let signer: Signer;

beforeAll(async () => {
  cluster = await Cluster.start({
    nodes: 3,
    env: { TABWIRE_QR_REQUESTS_PER_SESSION_PER_MINUTE: '10000', TABWIRE_LONG_POLL_HOLD_SECONDS: '2', TABWIRE_OUTBOX_LIMIT: String(OUTBOX_LIMIT) },
  });
  dir = mkdtempSync(join(tmpdir(), 'tabwire-stall-'));
  signer = await createSigner(cluster, dir);
}, 120_000);
afterAll(async () => {
  cluster?.redis.resume();
  await cluster?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const readyz = async (index: number): Promise<number> => (await fetch(`${cluster.url(index)}/readyz`)).status;

/** What a page shows, de-duplicated as /Events.js does (src/browser/dispatcher.ts): a frame whose id is not above the last one seen is dropped. */
function shown(frames: readonly EventFrame[]): EventFrame[] {
  let last = -1;
  return frames.filter((f) => {
    if (typeof f.id !== 'number') return true;
    if (f.id <= last) return false;
    last = f.id;
    return true;
  });
}
const results = (frames: readonly EventFrame[]) => frames.filter((f) => f.type === 'SignatureReceived' || f.type === 'SignatureRejected');

describe('Redis stalls (SIGSTOP) during logins', () => {
  it('5 s and 12 s stalls: /readyz not ready meanwhile; every settled result shown once at its page', async () => {
    const ws = await TestTab.open(cluster.wsUrl(0));
    await ws.next('CheckServerInstance');
    let turn = 0;
    const poll = new LongPollPage(() => cluster.url(turn++ % 3), randomUUID());
    expect(await poll.poll()).toBe(200);
    poll.start();
    const pages: Record<'ws' | 'poll', PageSession> = { ws, poll: poll.page };
    const frames = { ws: () => ws.events, poll: () => poll.frames };

    const settled: { purpose: string; page: 'ws' | 'poll' }[] = [];
    const failed: string[] = [];
    let stopping = false;
    let n = 0;
    const traffic = Array.from({ length: 3 }, async () => {
      while (!stopping) {
        const page = n % 2 === 0 ? 'ws' : 'poll';
        const purpose = `login ${n++}`;
        try {
          await settleCode({ qrBase: cluster.url(randomInt(3)), signBase: cluster.url(randomInt(3)), page: pages[page], purpose, decision: 'approve', signer });
          settled.push({ purpose, page });
        } catch (err) {
          failed.push(`${purpose}: ${String(err)}`);
        }
      }
    });

    const stalls: string[] = [];
    for (const seconds of [5, 12]) {
      const before = settled.length;
      await until(() => settled.length >= before + 10, 'logins before the stall', 60_000);
      cluster.redis.pause();
      const stalledAt = Date.now();
      await until(async () => (await readyz(0)) === 503, '/readyz not ready during the stall', seconds * 1000);
      // The stall lasts its length whatever the test does meanwhile: this wait is the fault, not a timing guess.
      await new Promise((r) => setTimeout(r, Math.max(0, seconds * 1000 - (Date.now() - stalledAt))));
      cluster.redis.resume();
      for (const index of [0, 1, 2]) await until(async () => (await readyz(index)) === 200, `/readyz of node ${index + 1} ready after SIGCONT`, 30_000);
      const after = settled.length;
      await until(() => settled.length >= after + 10, 'logins after the stall', 60_000);
      stalls.push(`${seconds} s: settled ${after - before} around it`);
    }
    stopping = true;
    await Promise.all(traffic);
    // Within the streams' bound: each page gets fewer results than a stream keeps.
    for (const page of ['ws', 'poll'] as const) expect(settled.filter((s) => s.page === page).length).toBeLessThan(OUTBOX_LIMIT);

    // 0 lost.
    await until(
      () => settled.every((s) => results(frames[s.page]()).some((f) => purposeOf(f) === s.purpose)),
      'every settled result at its page',
      90_000,
    );
    for (const page of ['ws', 'poll'] as const) {
      expect(frames[page]().filter((f) => f.type === 'EventsLost'), `EventsLost at the ${page} page`).toEqual([]);
      // One id per result: copies with the same id are dropped by the page; a copy under a new id would not be.
      const idsOf = new Map<string, Set<number>>();
      for (const f of results(frames[page]())) idsOf.set(purposeOf(f)!, (idsOf.get(purposeOf(f)!) ?? new Set()).add(f.id));
      const copies = [...idsOf].filter(([, ids]) => ids.size > 1).map(([purpose]) => purpose);
      expect(copies, `results under more than one id at the ${page} page`).toEqual([]);
      // 0 duplicates as the page shows them.
      const purposes = results(shown(frames[page]())).map(purposeOf);
      expect(new Set(purposes).size, `results shown twice at the ${page} page`).toBe(purposes.length);
    }
    await poll.stop();
    ws.close();
    console.info(`redis stall: ${stalls.join('; ')}; settled ${settled.length}, failed requests ${failed.length}, poll failures ${poll.failures.length}`);
  }, 300_000);
});
