import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cluster } from '../helpers/cluster.js';
import { purposeOf, settleCode } from '../helpers/cluster-flows.js';
import { TestTab } from '../helpers/tab.js';
import { until } from '../helpers/until.js';

/**
 * The broker's announcements are at most once (src/broker/broker.ts `subscribe`): a node whose Redis
 * subscriber is reconnecting misses what is announced meanwhile. Here the subscribers lose their connection (CLIENT KILL TYPE pubsub) and Redis
 * refuses new connections (maxclients) until the test lets them in again, so an event published in between
 * deterministically reaches the tab's stream but is not announced to its node.
 */
let cluster: Cluster;
let admin: Redis;

beforeAll(async () => {
  cluster = await Cluster.start({ nodes: 2 });
  admin = new Redis(cluster.redis.url);
}, 120_000);
afterAll(async () => {
  admin?.disconnect();
  await cluster?.stop();
});

const subscribers = async () => String(await admin.call('CLIENT', 'LIST', 'TYPE', 'pubsub')).split('\n').filter((l) => l.trim() !== '').length;

/**
 * Settles a code for `tab` through node 2 while no node is subscribed to announcements (its command connection
 * stays, so the event is appended to the stream and announced to nobody), then waits for both subscribers.
 */
async function missAnnouncement(tab: TestTab, purpose: string): Promise<void> {
  await admin.config('SET', 'maxclients', '1');
  try {
    await admin.client('KILL', 'TYPE', 'pubsub');
    await until(async () => (await subscribers()) === 0, 'the subscribers to be gone');
    await settleCode({ qrBase: cluster.url(1), signBase: cluster.url(1), page: tab, purpose, decision: 'approve' });
  } finally {
    await admin.config('SET', 'maxclients', '10000');
  }
  await until(async () => (await subscribers()) === 2, 'both nodes to subscribe again');
}

describe('a node that missed announcements while its subscriber reconnected', () => {
  // The broker says when it subscribed again after a disconnect (Broker.onResume), and the hub then catches every
  // open connection up from the broker: without that the event would wait for the tab's next event.
  it('writes the event to its WebSocket once the subscriber is back, without waiting for a later event', async () => {
    const tab = await TestTab.open(cluster.wsUrl(0));
    await tab.next('CheckServerInstance');
    await missAnnouncement(tab, 'missed');
    // Beyond one presence heartbeat (10 s): only the catch-up on resubscription delivers it (the heartbeat does not read streams).
    await until(() => tab.events.some((e) => purposeOf(e) === 'missed'), 'the missed event', 12_000);
    tab.close();
  }, 60_000);

  it('the next event brings a missed one along, in order (the node sees the gap in ids and reads the stream)', async () => {
    const tab = await TestTab.open(cluster.wsUrl(0));
    await tab.next('CheckServerInstance');
    await missAnnouncement(tab, 'missed');
    await settleCode({ qrBase: cluster.url(1), signBase: cluster.url(1), page: tab, purpose: 'next', decision: 'approve' });
    await until(() => tab.events.some((e) => purposeOf(e) === 'next'), 'the next event');
    expect(tab.events.map(purposeOf)).toEqual(['missed', 'next']);
    tab.close();
  }, 60_000);
});
