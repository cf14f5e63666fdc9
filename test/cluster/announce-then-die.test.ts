import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Cluster } from '../helpers/cluster.js';
import { purposeOf, settleCode, type Signer, signOnHeldNode } from '../helpers/cluster-flows.js';
import { startHeldCluster, type HeldCluster } from '../helpers/held-cluster.js';
import { startRedisCluster, type RedisClusterServer } from '../helpers/redis-cluster.js';
import { TestTab } from '../helpers/tab.js';
import { until } from '../helpers/until.js';

/**
 * On a Redis Cluster a node announces an event after appending it to the tab's stream, by a command of its
 * own (docs/redis.md "Redis Cluster"). A node that dies between the two leaves the event in the stream with
 * nobody told. Node 1 runs with a fixture that holds it exactly there (test/fixtures/hold-before-announce.mjs)
 * as it publishes a login's result; the test SIGKILLs it once it is held. The page is on node 2. What must
 * hold: the page gets the result exactly once. Its settlement row is still owed (the dying node never marked
 * it), so a live node's result outbox publishes it again under the code's key: the stream appends nothing,
 * answers with the event it holds, and that node announces it.
 */
let shards: RedisClusterServer;
let cluster: Cluster;
let dir: string;
let signer: Signer;
const mark = () => join(dir, 'held');

let held: HeldCluster | undefined;

beforeAll(async () => {
  shards = await startRedisCluster(3);
  held = await startHeldCluster({
    nodes: 3,
    env: { TABWIRE_REDIS_CLUSTER_URLS: shards.urls.join(',') },
    dirPrefix: 'tabwire-announce-die-',
    fixture: 'test/fixtures/hold-before-announce.mjs',
    fixtureEnv: (at) => ({ HOLD_BEFORE_ANNOUNCE_MARK: join(at, 'held') }),
  });
  ({ cluster, dir, signer } = held);
}, 180_000);
afterAll(async () => {
  await held?.stop();
  await shards?.stop();
});

const results = (tab: TestTab) => tab.events.filter((e) => e.type === 'SignatureReceived' || e.type === 'SignatureRejected');

describe('a node SIGKILLed on a Redis Cluster between appending a result and announcing it', () => {
  it('the page on another node gets the result exactly once, announced by a live node', async () => {
    const tab = await TestTab.open(cluster.wsUrl(1));
    await tab.next('CheckServerInstance');
    await signOnHeldNode({
      qrBase: cluster.url(2),
      doomedBase: cluster.url(0),
      page: tab,
      purpose: 'unannounced',
      signer,
      heldFile: mark(),
      instant: 'between the append and the announcement',
      kill: () => cluster.kill(0),
    });
    await until(() => results(tab).some((e) => purposeOf(e) === 'unannounced'), 'the result at the page', 60_000);
    // A login through the live nodes after everything else: a copy of the result would have come before it.
    await settleCode({ qrBase: cluster.url(2), signBase: cluster.url(1), page: tab, purpose: 'marker', decision: 'reject', signer });
    await until(() => results(tab).some((e) => purposeOf(e) === 'marker'), 'the marker');
    expect(results(tab).map(purposeOf)).toEqual(['unannounced', 'marker']);
    expect(results(tab)[0]).toMatchObject({ type: 'SignatureReceived', data: { Purpose: 'unannounced', Properties: { FIRST: 'Ada' } } });
    tab.close();
  }, 180_000);
});
