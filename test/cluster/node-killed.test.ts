import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventFrame } from '../../src/protocol/frames.js';
import { Cluster } from '../helpers/cluster.js';
import { LongPollPage, purposeOf, settleCode } from '../helpers/cluster-flows.js';
import { TestTab } from '../helpers/tab.js';
import { until } from '../helpers/until.js';

/**
 * A page's WebSocket is on a node that is SIGKILLed; the page reconnects to another node and says the
 * last id it saw (docs/events.md "Event streams"). Streams keep at most 5 events here (outboxLimit), so
 * the second half can exceed the bound with a few logins. A long-poll page that falls behind the bound
 * between two polls is told the same way. Polls are held 1 s, so a poll that finds nothing ends soon.
 */
const LIMIT = 5;
let cluster: Cluster;

beforeAll(async () => {
  cluster = await Cluster.start({ nodes: 3, env: { TABWIRE_OUTBOX_LIMIT: String(LIMIT), TABWIRE_LONG_POLL_HOLD_SECONDS: '1' } });
}, 120_000);
afterAll(async () => cluster?.stop());

const LOCATION = 'http://127.0.0.1/page';
const results = (tab: TestTab) => tab.events.filter((e) => e.type === 'SignatureReceived');
/** The newest id the page saw (events and instance greetings alike). */
const lastId = (tab: TestTab) => Math.max(...[...tab.events, ...tab.instances].map((e) => (typeof e.id === 'number' ? e.id : 0)));

/** The page comes back on another node with the same tab id and cookie, and says what it saw last. */
async function resume(url: string, tab: TestTab, after: number): Promise<TestTab> {
  const again = await TestTab.open(url, { cookie: tab.cookie, tabId: tab.tabId, register: false });
  again.send({ cmd: 'Register', tabId: tab.tabId, location: LOCATION, lastEventId: after });
  return again;
}

const ids = (frames: EventFrame[]) => frames.filter((f) => typeof f.id === 'number').map((f) => f.id);

describe('the node holding a WebSocket is SIGKILLed', () => {
  it('the page resumes on another node with its last id and gets the events sent meanwhile; beyond the bound it is told EventsLost', async () => {
    // Node 1 holds the page; a login through nodes 1 and 2 reaches it.
    const tab = await TestTab.open(cluster.wsUrl(0));
    await tab.next('CheckServerInstance');
    await settleCode({ qrBase: cluster.url(0), signBase: cluster.url(1), page: tab, purpose: 'before', decision: 'approve' });
    await tab.next('SignatureReceived');
    const seen = lastId(tab);

    await cluster.kill(0);
    await tab.closed();
    // Meanwhile (fewer than the bound): QR requests on node 2, signatures on node 3.
    const meanwhile = ['meanwhile 1', 'meanwhile 2', 'meanwhile 3'];
    for (const purpose of meanwhile) await settleCode({ qrBase: cluster.url(1), signBase: cluster.url(2), page: tab, purpose, decision: 'approve' });

    const onTwo = await resume(cluster.wsUrl(1), tab, seen);
    await until(() => results(onTwo).length >= meanwhile.length, 'the events sent meanwhile');
    await onTwo.next('CheckServerInstance');
    expect(onTwo.events.map((e) => e.type)).toEqual(['SignatureReceived', 'SignatureReceived', 'SignatureReceived']);
    expect(results(onTwo).map(purposeOf)).toEqual(meanwhile);
    const resumed = ids(onTwo.events);
    expect(resumed[0]).toBe(seen + 1);
    expect(resumed.every((id, n) => n === 0 || id === resumed[n - 1]! + 1)).toBe(true);

    // Now node 2 dies with the page on it, and more logins than the stream keeps happen before the page is back.
    const seenOnTwo = lastId(onTwo);
    await cluster.restart(0);
    await cluster.kill(1);
    await onTwo.closed();
    const overflow = Array.from({ length: LIMIT + 3 }, (_, k) => `overflow ${k + 1}`);
    for (const purpose of overflow) await settleCode({ qrBase: cluster.url(0), signBase: cluster.url(2), page: tab, purpose, decision: 'approve' });

    const onOne = await resume(cluster.wsUrl(0), tab, seenOnTwo);
    await until(() => results(onOne).length >= LIMIT, 'what the stream still has');
    await onOne.next('CheckServerInstance');
    // Told first, then the newest LIMIT events in order; nothing else.
    expect(onOne.events[0]).toMatchObject({ type: 'EventsLost', data: { after: seenOnTwo } });
    expect(onOne.events[0]!.id).toBeUndefined();
    expect(onOne.events.slice(1).map(purposeOf)).toEqual(overflow.slice(-LIMIT));
    const kept = ids(onOne.events);
    expect(kept[0]).toBeGreaterThan(seenOnTwo + 1);
    expect(kept.every((id, n) => n === 0 || id === kept[n - 1]! + 1)).toBe(true);
    onOne.close();
  }, 120_000);
});

describe('a long-poll page falls behind its stream between two polls', () => {
  it('its next poll is told EventsLost after its last id, then gets what the stream kept, in order', async () => {
    // On node 3 only, which the case above never stops.
    const base = cluster.url(2);
    const page = new LongPollPage(() => base, randomUUID());
    // The first poll registers the tab and brings the session cookie.
    expect(await page.poll()).toBe(200);
    const resultsAt = () => page.frames.filter((f) => f.type === 'SignatureReceived');
    await settleCode({ qrBase: base, signBase: base, page: page.page, purpose: 'before', decision: 'approve' });
    while (resultsAt().length < 1) expect(await page.poll()).toBe(200);
    const seen = page.lastEventId!;

    // No poll while more results than the stream keeps are settled.
    const overflow = Array.from({ length: LIMIT + 3 }, (_, k) => `overflow ${k + 1}`);
    for (const purpose of overflow) await settleCode({ qrBase: base, signBase: base, page: page.page, purpose, decision: 'approve' });

    const before = page.frames.length;
    while (resultsAt().length < 1 + LIMIT) expect(await page.poll()).toBe(200);
    const after = page.frames.slice(before);
    expect(after[0]).toMatchObject({ type: 'EventsLost', data: { after: seen } });
    expect(after[0]!.id).toBeUndefined();
    expect(after.slice(1).map(purposeOf)).toEqual(overflow.slice(-LIMIT));
    const kept = ids(after);
    expect(kept[0]).toBeGreaterThan(seen + 1);
    expect(kept.every((id, n) => n === 0 || id === kept[n - 1]! + 1)).toBe(true);
    expect(page.failures).toEqual([]);
  }, 120_000);
});
