import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchSignInfo, postDecision } from '../../src/cli/signer.js';
import { FLIGHTS_LIMIT } from '../../src/quicklogin/published-marks.js';
import { announcedAt as markOf } from '../helpers/announced-at.js';
import type { Cluster } from '../helpers/cluster.js';
import { on, purposeOf, requestSignUrl, type Signer } from '../helpers/cluster-flows.js';
import { startHeldCluster, type HeldCluster } from '../helpers/held-cluster.js';
import { TestTab } from '../helpers/tab.js';
import { until } from '../helpers/until.js';

/**
 * A node is stopped (SIGTERM) with published marks not yet written (src/quicklogin/published-marks.ts): its
 * stop must write them before the store closes, or the result outbox publishes those results again after a
 * restart. One node only, so no other node's outbox can mark the rows instead. The node runs with a fixture
 * (test/fixtures/hold-after-settle.mjs, `mark-until-term`) that holds every mark's UPDATE until the SIGTERM
 * and sends it then. With as many statements held as may be in flight, the next login's mark has to wait: at
 * the SIGTERM it is certainly waiting, whatever the machine's speed.
 */
let cluster: Cluster;
let dir: string;
let signer: Signer;
const held = () => join(dir, 'held');

let started: HeldCluster | undefined;

beforeAll(async () => {
  started = await startHeldCluster({
    nodes: 1,
    dirPrefix: 'tabwire-stop-marks-',
    fixture: 'test/fixtures/hold-after-settle.mjs',
    fixtureEnv: (at) => ({ HOLD_AFTER_SETTLE_MARK: join(at, 'held'), HOLD_STEP: 'mark-until-term' }),
  });
  ({ cluster, dir, signer } = started);
}, 120_000);
afterAll(async () => {
  await started?.stop();
});

const heldCount = () => (existsSync(held()) ? Number(readFileSync(held(), 'utf8')) : 0);

/** A login on the node whose result reaches the page; resolves with its code. */
async function login(tab: TestTab, purpose: string): Promise<string> {
  const signUrl = await requestSignUrl(cluster.url(0), tab, purpose);
  const info = await fetchSignInfo(on(cluster.url(0), signUrl));
  await postDecision(on(cluster.url(0), signUrl), info, signer.legalId, signer.key, 'approve');
  await until(() => tab.events.some((e) => purposeOf(e) === purpose), `the result of ${purpose} at the page`);
  return info.code;
}

const announcedAt = (code: string) => markOf(cluster.store, code);

describe('a node stopped with published marks waiting and in flight', () => {
  it('writes every mark before its store closes, and exits 0', async () => {
    const tab = await TestTab.open(cluster.wsUrl(0));
    await tab.next('CheckServerInstance');
    // One login per statement the node may have in flight, each statement held before the next login.
    const codes: string[] = [];
    for (let k = 1; k <= FLIGHTS_LIMIT; k++) {
      codes.push(await login(tab, `in flight ${k}`));
      await until(() => heldCount() >= k, `mark statement ${k} held in flight`, 60_000);
    }
    // Its mark cannot be sent while the others are held: it waits.
    const waiting = await login(tab, 'waiting');
    expect(heldCount()).toBe(FLIGHTS_LIMIT);
    for (const code of [...codes, waiting]) expect(await announcedAt(code)).toBeNull();
    tab.close();

    const exit = await cluster.kill(0, 'SIGTERM');
    expect(exit).toEqual({ code: 0, signal: null });
    for (const code of [...codes, waiting]) expect(await announcedAt(code), code).not.toBeNull();
  }, 120_000);
});
