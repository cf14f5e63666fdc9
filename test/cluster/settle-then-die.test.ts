import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchSignInfo, postDecision } from '../../src/cli/signer.js';
import { announcedAt as markOf } from '../helpers/announced-at.js';
import type { Cluster } from '../helpers/cluster.js';
import { on, purposeOf, requestSignUrl, settleCode, type Signer, signOnHeldNode } from '../helpers/cluster-flows.js';
import { startHeldCluster, type HeldCluster } from '../helpers/held-cluster.js';
import { TestTab } from '../helpers/tab.js';
import { until } from '../helpers/until.js';

/**
 * A node dies at the worst instant of a signature: the settlement has committed, nothing is published
 * (docs/events.md "Results"). Node 1 runs with a fixture that holds its signature path exactly there
 * (test/fixtures/hold-after-settle.mjs); the test SIGKILLs it once it is held. The page is on node 2.
 * What must hold: the page gets the result exactly once (the result outbox of a live node publishes it
 * from the settlement row, under the code's key), and the signing app's retry of its POST on another node
 * is answered 409 code_already_used while the result still reaches the page, once.
 */
let cluster: Cluster;
let dir: string;
let signer: Signer;
const mark = () => join(dir, 'held');
/** Where node 1's fixture holds it (HOLD_STEP): read when the node starts. */
let holdStep: 'settle' | 'mark' = 'settle';

let held: HeldCluster | undefined;

beforeAll(async () => {
  held = await startHeldCluster({
    nodes: 3,
    dirPrefix: 'tabwire-settle-die-',
    fixture: 'test/fixtures/hold-after-settle.mjs',
    fixtureEnv: (at) => ({ HOLD_AFTER_SETTLE_MARK: join(at, 'held'), HOLD_STEP: holdStep }),
  });
  ({ cluster, dir, signer } = held);
}, 120_000);
afterAll(async () => {
  await held?.stop();
});

const results = (tab: TestTab) => tab.events.filter((e) => e.type === 'SignatureReceived' || e.type === 'SignatureRejected');

/** A QR request of the page on node 2; the signing app's POST goes to node 1, which is held after its commit and SIGKILLed. */
const signOnDoomedNode = (tab: TestTab, purpose: string) =>
  signOnHeldNode({
    qrBase: cluster.url(1),
    doomedBase: cluster.url(0),
    page: tab,
    purpose,
    signer,
    heldFile: mark(),
    instant: 'between the settlement commit and the publish',
    kill: () => cluster.kill(0),
  });

/** A login through the live nodes after everything else: a copy of an earlier result would have come before it. */
async function marker(tab: TestTab, purpose: string): Promise<void> {
  await settleCode({ qrBase: cluster.url(2), signBase: cluster.url(1), page: tab, purpose, decision: 'reject', signer });
  await until(() => tab.events.some((e) => purposeOf(e) === purpose), `the marker ${purpose}`);
}

const announcedAt = (code: string) => markOf(cluster.store, code);

describe('a node SIGKILLed between the settlement commit and the publish', () => {
  it('the page on another node gets the result exactly once, from the settlement row', async () => {
    const tab = await TestTab.open(cluster.wsUrl(1));
    await tab.next('CheckServerInstance');
    await signOnDoomedNode(tab, 'orphaned');
    await until(() => results(tab).some((e) => purposeOf(e) === 'orphaned'), 'the orphaned result at the page', 60_000);
    await marker(tab, 'marker 1');
    expect(results(tab).map(purposeOf)).toEqual(['orphaned', 'marker 1']);
    expect(results(tab)[0]).toMatchObject({ type: 'SignatureReceived', data: { Purpose: 'orphaned', Properties: { FIRST: 'Ada' } } });
    tab.close();
  }, 120_000);

  it('the signing app’s retry on another node is answered 409 code_already_used, and the page gets the result once', async () => {
    await cluster.restart(0);
    const tab = await TestTab.open(cluster.wsUrl(2));
    await tab.next('CheckServerInstance');
    const { signUrl, info } = await signOnDoomedNode(tab, 'retried');
    const retry = await postDecision(on(cluster.url(2), signUrl), info, signer.legalId, signer.key, 'approve').then(
      () => 'answered 200',
      (err: { status?: number; code?: string }) => `${err.status} ${err.code}`,
    );
    expect(retry).toBe('409 code_already_used');
    await until(() => results(tab).some((e) => purposeOf(e) === 'retried'), 'the result at the page', 60_000);
    await marker(tab, 'marker 2');
    expect(results(tab).map(purposeOf)).toEqual(['retried', 'marker 2']);
    const ids = results(tab).map((e) => e.id);
    expect(ids[1]!).toBeGreaterThan(ids[0]!);
    tab.close();
  }, 120_000);

  it('a node SIGKILLed after the publish, before it wrote the mark: the page has the result once, and a live node marks it', async () => {
    holdStep = 'mark';
    await cluster.restart(0);
    const tab = await TestTab.open(cluster.wsUrl(1));
    await tab.next('CheckServerInstance');
    rmSync(mark(), { force: true });
    const signUrl = await requestSignUrl(cluster.url(1), tab, 'unmarked');
    const info = await fetchSignInfo(on(cluster.url(0), signUrl));
    // Answered: the mark is not awaited by the signature.
    await postDecision(on(cluster.url(0), signUrl), info, signer.legalId, signer.key, 'approve');
    await until(() => results(tab).some((e) => purposeOf(e) === 'unmarked'), 'the result at the page, published by node 1');
    await until(() => existsSync(mark()), 'node 1 held as it writes the mark', 60_000);
    await cluster.kill(0);
    expect(await announcedAt(info.code)).toBeNull();
    // A live node's result outbox finds the row owed, publishes it again under its key (the stream appends
    // nothing) and marks it.
    await until(async () => (await announcedAt(info.code)) !== null, 'the row marked by a live node', 60_000);
    await marker(tab, 'marker 3');
    expect(results(tab).map(purposeOf)).toEqual(['unmarked', 'marker 3']);
    tab.close();
  }, 120_000);
});
