import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cluster } from '../helpers/cluster.js';
import { LongPollPage, purposeOf, settleCode } from '../helpers/cluster-flows.js';
import { TestTab } from '../helpers/tab.js';
import { until } from '../helpers/until.js';

// Redis stops under a cluster (docs/events.md "Outages", docs/redis.md "During a Redis outage"): a Register or
// a poll that needs the tab's stream waits for Redis up to the hold time (3 s here), then the socket is closed
// `1013 shared_state_unavailable` or the poll answered `503 shared_state_unavailable` with Retry-After —
// never 500 or 1011. When Redis is back the refused clients are served again with the same tab, and a login
// signed before the outage and one signed after it reach their pages.
let cluster: Cluster;

beforeAll(async () => {
  cluster = await Cluster.start({ nodes: 2, env: { TABWIRE_LONG_POLL_HOLD_SECONDS: '3', TABWIRE_OPEN_REGISTRATION: 'true' } });
}, 120_000);
afterAll(async () => cluster?.stop());

const postJson = (base: string, path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(base + path, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

const results = (frames: readonly { type: string; data: unknown }[]) => frames.filter((f) => f.type === 'SignatureReceived').map((f) => purposeOf(f as never));

describe('a Redis outage on the event channel of a cluster', () => {
  it('answers 1013 / 503 shared_state_unavailable with Retry-After past the hold time, then serves the same tabs again', async () => {
    const ws = await TestTab.open(cluster.wsUrl(0));
    await ws.next('CheckServerInstance');
    const tabs = [ws];
    // The pages ping as the event script does, so no socket is closed for silence however long the test takes.
    const pings = setInterval(() => tabs.filter((t) => t.closeCode === undefined).forEach((t) => t.send({ cmd: 'Ping' })), 5_000);
    const poller = new LongPollPage(() => cluster.url(1), randomUUID());
    expect(await poller.poll()).toBe(200);
    poller.start(1_000);
    await settleCode({ qrBase: cluster.url(1), signBase: cluster.url(0), page: ws, purpose: 'ws before', decision: 'approve' });
    await settleCode({ qrBase: cluster.url(0), signBase: cluster.url(1), page: poller.page, purpose: 'poll before', decision: 'approve' });
    await until(() => results(ws.events).includes('ws before'), 'the WebSocket page’s first login');
    await until(() => results(poller.frames).includes('poll before'), 'the polling page’s first login');

    // An agent of node 0 (its tokens verify there), for the Agent API during the outage.
    const account = { userName: 'outage-agent', password: 'long enough password' };
    expect((await postJson(cluster.url(0), '/Agent/Account/Create', account)).status).toBe(201);
    const login = await postJson(cluster.url(0), '/Agent/Account/Login', { ...account, seconds: 600 });
    const agent = { authorization: `Bearer ${((await login.json()) as { jwt: string }).jwt}`, cookie: ws.cookie };

    await cluster.redis.stopServer();
    // A handler registration needs Redis (the tab's presence, the handler registry): 503, not 500.
    const handler = await postJson(cluster.url(0), '/Agent/Xmpp/RegisterEventHandler', { function: 'OnChat', tabId: ws.tabId }, agent);
    expect(handler.status).toBe(503);
    expect(handler.headers.get('retry-after')).toBe('1');
    expect(await handler.json()).toMatchObject({ code: 'shared_state_unavailable' });
    // What needs only PostgreSQL goes on: offline messages.
    expect((await postJson(cluster.url(0), '/Agent/Xmpp/PopMessages', { maxCount: 5 }, agent)).status).toBe(200);
    // A new tab registering on either transport needs its stream in Redis.
    const refused = await TestTab.open(cluster.wsUrl(1));
    expect(await refused.closed(30_000)).toEqual({ code: 1013, reason: 'shared_state_unavailable' });
    const newPoll = await fetch(`${cluster.url(0)}/ClientEvents`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain', 'x-tabid': randomUUID() },
      body: 'http://127.0.0.1/page',
    });
    expect(newPoll.status).toBe(503);
    expect(newPoll.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(newPoll.headers.get('retry-after')).toBe('1');
    expect(await newPoll.json()).toMatchObject({ code: 'shared_state_unavailable', status: 503, retryAfter: 1 });
    // The page that was polling meets the same answers (or none, while a poll is held), never another error.
    await until(() => poller.failures.length > 0, 'the polling page meeting the outage', 30_000);

    await cluster.redis.start();
    const again = await TestTab.open(cluster.wsUrl(1), { cookie: refused.cookie, tabId: refused.tabId });
    tabs.push(again);
    await again.next('CheckServerInstance', 30_000);
    const pollsBefore = poller.polls;
    await until(() => poller.polls > pollsBefore + 1, 'the polling page served again', 30_000);
    await settleCode({ qrBase: cluster.url(0), signBase: cluster.url(1), page: again, purpose: 'refused, then after', decision: 'approve' });
    await settleCode({ qrBase: cluster.url(1), signBase: cluster.url(0), page: ws, purpose: 'ws after', decision: 'approve' });
    await settleCode({ qrBase: cluster.url(1), signBase: cluster.url(1), page: poller.page, purpose: 'poll after', decision: 'approve' });
    await until(() => results(again.events).includes('refused, then after'), 'the login of the tab refused during the outage', 30_000);
    await until(() => results(ws.events).includes('ws after'), 'the WebSocket page’s login after the outage', 30_000);
    await until(() => results(poller.frames).includes('poll after'), 'the polling page’s login after the outage', 30_000);
    await poller.stop();
    for (const failure of poller.failures) expect(failure).toMatch(/^503 \{.*"code":"shared_state_unavailable"/);
    // The socket that was open before the outage was never closed by it.
    expect(ws.closeCode).toBeUndefined();
    clearInterval(pings);
    ws.close();
    again.close();
  }, 150_000);
});
