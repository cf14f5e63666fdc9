import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { shareOf } from '../../src/rate-limit/share-ledger.js';
import { Cluster } from '../helpers/cluster.js';
import { testConnection } from '../helpers/redis.js';
import type { RedisConnection } from '../../src/redis/connection.js';
import { TestTab } from '../helpers/tab.js';

/**
 * The QR limits on three nodes (dist/main.js) sharing one Redis: each node decides alone and syncs its counts
 * in the background (docs/redis.md "Limits"), so a client sending round-robin to all three far above a limit
 * gets at least the limit and at most `limit + 3 × share − 1` answered in the window, and Redis receives no
 * rate-limit command per request (counted with INFO commandstats). Addresses come from X-Forwarded-For
 * (trustProxy), so the session and the address flood are counted apart.
 */
const SESSION_LIMIT = 30;
const ADDRESS_LIMIT = 40;

let cluster: Cluster;
let redis: RedisConnection;
const tabs: TestTab[] = [];

beforeAll(async () => {
  cluster = await Cluster.start({
    nodes: 3,
    env: {
      TABWIRE_QR_REQUESTS_PER_SESSION_PER_MINUTE: String(SESSION_LIMIT),
      TABWIRE_QR_REQUESTS_PER_ADDRESS_PER_MINUTE: String(ADDRESS_LIMIT),
      TABWIRE_TRUST_PROXY: 'true',
      TABWIRE_RATE_LIMIT_SYNC_MS: '100',
    },
  });
  redis = testConnection(cluster.redis.url, 'qr-limits-cluster:');
}, 120_000);
afterAll(async () => {
  for (const tab of tabs) tab.close();
  await redis?.close();
  await cluster?.stop();
});

async function openTab(): Promise<TestTab> {
  const tab = await TestTab.open(cluster.wsUrl(0));
  tabs.push(tab);
  await tab.next('CheckServerInstance');
  return tab;
}

interface Answer {
  status: number;
  retryAfter: number;
  body: { code?: string; limit?: string };
  contentType: string;
}

async function qr(node: number, tab: TestTab, address: string): Promise<Answer> {
  const response = await fetch(`${cluster.url(node)}/QuickLogin`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', cookie: tab.cookie, 'x-forwarded-for': address },
    body: JSON.stringify({ mode: 'text', purpose: 'Log in', serviceId: '', tab: tab.tabId }),
  });
  return { status: response.status, retryAfter: Number(response.headers.get('retry-after')), body: (await response.json()) as Answer['body'], contentType: response.headers.get('content-type') ?? '' };
}

/** Calls per command since the server started (`INFO commandstats`; commands scripts run are counted too). */
async function commandStats(): Promise<Map<string, number>> {
  const info = (await redis.client.info('commandstats')) as string;
  const stats = new Map<string, number>();
  for (const match of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) stats.set(match[1]!, Number(match[2]));
  return stats;
}
const delta = (before: Map<string, number>, after: Map<string, number>, command: string) => (after.get(command) ?? 0) - (before.get(command) ?? 0);
const total = (stats: Map<string, number>) => [...stats.entries()].filter(([name]) => name !== 'info').reduce((sum, [, calls]) => sum + calls, 0);

/**
 * Sends QR requests round-robin to the three nodes until every node has refused one for a full window (a
 * Retry-After of 2 s or more: a node that only waits for its next sync says 1 s), then three times the limit
 * more, all refused. Returns the answers.
 */
async function flood(send: (node: number, i: number) => Promise<Answer>, limit: number): Promise<Answer[]> {
  const answers: Answer[] = [];
  const closed = new Set<number>();
  for (let i = 0; closed.size < 3; i++) {
    // Bounds a broken run only: a working cluster closes after a few hundred requests.
    if (i > 100_000) throw new Error(`the cluster never closed the window: ${answers.filter((a) => a.status === 200).length} answered`);
    const answer = await send(i % 3, i);
    answers.push(answer);
    if (answer.status === 429 && answer.retryAfter >= 2) closed.add(i % 3);
  }
  for (let i = 0; i < 3 * limit; i++) {
    const answer = await send(i % 3, i);
    expect(answer.status).toBe(429);
    answers.push(answer);
  }
  return answers;
}

describe('QR limits on three nodes: decided on each node, synced in the background', () => {
  it(`one session round-robin far above its limit (${SESSION_LIMIT}): at least the limit, at most limit + 3 × share − 1, and no Redis command per request`, async () => {
    const tab = await openTab();
    const before = await commandStats();
    const started = performance.now();
    const answers = await flood((node) => qr(node, tab, '192.0.2.1'), SESSION_LIMIT);
    const elapsed = performance.now() - started;
    const after = await commandStats();
    const answered = answers.filter((a) => a.status === 200).length;
    const refused = answers.filter((a) => a.status === 429);
    expect(answered).toBeGreaterThanOrEqual(SESSION_LIMIT);
    expect(answered).toBeLessThanOrEqual(SESSION_LIMIT + 3 * shareOf(SESSION_LIMIT) - 1);
    expect(answers.length).toBeGreaterThanOrEqual(4 * SESSION_LIMIT);
    for (const answer of refused) {
      expect(answer.contentType).toContain('application/problem+json');
      expect(answer.body).toMatchObject({ code: 'rate_limited', limit: 'qr_session' });
      expect(answer.retryAfter).toBeGreaterThanOrEqual(1);
    }
    // The nodes' metric counts every refusal.
    let counted = 0;
    for (let node = 0; node < 3; node++) {
      const text = await (await fetch(`${cluster.url(node)}/metrics`)).text();
      counted += Number(/^tabwire_rate_limited_total\{limit="qr_session"\} (\d+)/m.exec(text)?.[1] ?? 0);
    }
    expect(counted).toBe(refused.length);
    // The per-request counter of the exact store (INCR) was never run. What the limits sent is the syncs'
    // INCRBY, one per key a node saw since its last sync (two here: the session and the address), in one
    // script per sync. A node syncs at most once per 100 ms, so however slow the machine, the pushes are
    // bounded by the time the flood took, not by its requests.
    expect(delta(before, after, 'incr')).toBe(0);
    const pushes = delta(before, after, 'incrby');
    expect(pushes).toBeGreaterThan(0);
    expect(pushes).toBeLessThanOrEqual(2 * 3 * (Math.ceil(elapsed / 100) + 1));
    console.log(
      `QR limits, one session, 3 nodes: ${answers.length} requests in ${Math.round(elapsed)} ms, ${answered} answered (limit ${SESSION_LIMIT}, bound ${SESSION_LIMIT + 3 * shareOf(SESSION_LIMIT) - 1}); ` +
        `Redis meanwhile: ${total(after) - total(before)} commands in all (background included; scripts' inner commands counted), ` +
        `${pushes} keys pushed by syncs (INCRBY), ${delta(before, after, 'evalsha') + delta(before, after, 'eval')} scripts of any kind, ${delta(before, after, 'incr')} INCR`,
    );
  });

  it(`one address round-robin far above its limit (${ADDRESS_LIMIT}), from 16 sessions: within the same bound`, async () => {
    const sessions: TestTab[] = [];
    for (let i = 0; i < 16; i++) sessions.push(await openTab());
    const answers = await flood((node, i) => qr(node, sessions[i % 16]!, '192.0.2.2'), ADDRESS_LIMIT);
    const answered = answers.filter((a) => a.status === 200).length;
    expect(answered).toBeGreaterThanOrEqual(ADDRESS_LIMIT);
    expect(answered).toBeLessThanOrEqual(ADDRESS_LIMIT + 3 * shareOf(ADDRESS_LIMIT) - 1);
    const refused = answers.filter((a) => a.status === 429);
    // Mostly the address; a session's own limit is checked first and counts every request that reaches it,
    // so a session may also wait for its node's next sync (or, late in the flood, be full itself).
    expect(refused.filter((a) => a.body.limit === 'qr_address').length).toBeGreaterThanOrEqual(3 * ADDRESS_LIMIT / 2);
    expect(refused.every((a) => a.body.limit === 'qr_address' || a.body.limit === 'qr_session')).toBe(true);
    console.log(`QR limits, one address, 3 nodes: ${answers.length} requests, ${answered} answered (limit ${ADDRESS_LIMIT}, bound ${ADDRESS_LIMIT + 3 * shareOf(ADDRESS_LIMIT) - 1})`);
    // Another address is counted apart. A fresh session asks: the flood's sessions may be full themselves or
    // hold a full share on node 1 until its next sync (a fast machine sends one session ~30 requests here).
    const other = await qr(1, await openTab(), '192.0.2.3');
    expect(other.body.limit).toBeUndefined();
    expect(other.status).toBe(200);
  });
});
