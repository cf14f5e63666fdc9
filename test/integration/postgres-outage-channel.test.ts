import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchSignInfo, postDecision } from '../../src/cli/signer.js';
import { privateKeyFromPem } from '../../src/identity/keys.js';
import type { EventFrame } from '../../src/protocol/frames.js';
import { get, post, registered, type Answer } from '../helpers/http.js';
import { startPostgres, type PostgresServer } from '../helpers/postgres.js';
import { makeIdentity, startService, type TestService } from '../helpers/service.js';
import { TestTab } from '../helpers/tab.js';
import { until } from '../helpers/until.js';

// PostgreSQL stops under running services while tabs log in and poll (docs/events.md "Outages"): the event
// channel answers what every route answers, 503 problem+json `store_unavailable` with Retry-After, or closes
// a WebSocket 1013 — never 500 or 1011. A Register or a poll first waits through the outage for up to the
// hold time, so a short outage shows no error at all. Nothing signed before the outage or after it is lost,
// and the service recovers by itself. A private server: this test stops it.

let server: PostgresServer;
/** Default hold (20 s): a Register or poll made during the outage waits it out. */
let held: TestService;
/** A 1 s hold: the outage outlasts it, so the channel's refusals can be seen. */
let brief: TestService;
let polling: PollingTab | undefined;

beforeAll(async () => {
  server = await startPostgres();
  held = await startService({ openRegistration: true, databasePoolSize: 3, callbackAllowHttpLoopback: true }, { databaseUrl: await server.createDatabase() });
  brief = await startService({ openRegistration: true, databasePoolSize: 3, longPollHoldSeconds: 1 }, { databaseUrl: await server.createDatabase() });
});
afterAll(async () => {
  await polling?.stop().catch(() => undefined);
  await held?.close();
  await brief?.close();
  await server?.stop();
});

const LOCATION = 'http://127.0.0.1/page';

/** One `POST /ClientEvents` as the reference script sends it (plus the cookie a browser would send). */
async function poll(service: TestService, tabId: string, o: { cookie?: string; lastEventId?: number; signal?: AbortSignal } = {}) {
  const headers: Record<string, string> = { 'content-type': 'text/plain', 'x-tabid': tabId };
  if (o.cookie) headers.cookie = o.cookie;
  if (o.lastEventId !== undefined) headers['x-last-event-id'] = String(o.lastEventId);
  const response = await fetch(`${service.baseUrl}/ClientEvents`, { method: 'POST', headers, body: LOCATION, ...(o.signal ? { signal: o.signal } : {}) });
  const contentType = response.headers.get('content-type') ?? '';
  const body: unknown = contentType.includes('json') ? await response.json() : await response.text();
  const setCookie = response.headers.get('set-cookie');
  return { status: response.status, contentType, body, headers: response.headers, cookie: setCookie?.split(';')[0] };
}
type PollAnswer = Awaited<ReturnType<typeof poll>>;

/** What docs/errors.md promises for an outage: 503 problem+json with the outage's code and Retry-After. */
function expectOutage(answer: Pick<Answer, 'status' | 'contentType' | 'body' | 'headers'>, what: string) {
  expect(answer.status, what).toBe(503);
  expect(answer.contentType, what).toMatch(/^application\/problem\+json/);
  expect(answer.body, what).toMatchObject({ code: 'store_unavailable', status: 503, retryAfter: 1 });
  expect(answer.headers.get('retry-after'), what).toBe('1');
}

/**
 * A page's long-poll loop, as the reference script runs it (poll again at once after a 200) but with
 * Events.js's manners after an outage (again after Retry-After, same tab, X-Last-Event-ID): every answer
 * is recorded, every event kept.
 */
class PollingTab {
  readonly answers: PollAnswer[] = [];
  readonly events: EventFrame[] = [];
  private lastEventId: number | undefined;
  private readonly stopping = new AbortController();
  readonly done: Promise<void>;

  constructor(
    private readonly service: TestService,
    readonly tabId: string,
    readonly cookie: string,
  ) {
    this.done = this.loop();
  }

  private async loop(): Promise<void> {
    const signal = this.stopping.signal;
    while (!signal.aborted) {
      let answer: PollAnswer;
      try {
        answer = await poll(this.service, this.tabId, { cookie: this.cookie, signal, ...(this.lastEventId === undefined ? {} : { lastEventId: this.lastEventId }) });
      } catch (err) {
        if (signal.aborted) return;
        throw err;
      }
      this.answers.push(answer);
      if (answer.status === 200) {
        for (const frame of answer.body as EventFrame[]) {
          if (frame.type === 'NOP' || frame.type === 'CheckServerInstance') continue;
          this.events.push(frame);
          if (typeof frame.id === 'number') this.lastEventId = frame.id;
        }
      } else {
        await new Promise((resolve) => setTimeout(resolve, 1000 * Number(answer.headers.get('retry-after') ?? 1)));
      }
    }
  }

  /** Ends the loop, dropping the poll in flight. Rejects if a poll failed at the network level. */
  async stop(): Promise<void> {
    this.stopping.abort();
    await this.done;
  }
}

/** A login code for a tab of the session holding `cookie`. */
async function qrFor(service: TestService, tabId: string, cookie: string, purpose: string): Promise<string> {
  const answer = await post(service, '/QuickLogin', { mode: 'text', purpose, serviceId: '', tab: tabId }, { cookie });
  expect(answer.status, `QR request for ${purpose}`).toBe(200);
  return answer.body.signUrl as string;
}

async function sign(signUrl: string, signer: Awaited<ReturnType<typeof makeIdentity>>): Promise<void> {
  const info = await fetchSignInfo(signUrl);
  expect((await postDecision(signUrl, info, signer.identity.id, privateKeyFromPem(signer.privateKeyPem), 'approve')).state).toBe('approved');
}

const purposes = (events: EventFrame[]) => events.filter((e) => e.type === 'SignatureReceived').map((e) => (e.data as { Purpose: string }).Purpose);

describe('a PostgreSQL outage on the event channel', () => {
  it('holds Registers and polls through it, answers 503 / 1013 past the hold time, never 500 / 1011, and loses no login', async () => {
    const ada = await makeIdentity(held, { FIRST: 'Ada' });
    // Before the outage: a WebSocket tab and a long-polling tab, each with a login signed, and a code
    // issued for each that will be signed only after the outage.
    const wsTab = await TestTab.open(held.wsUrl);
    await registered(held, wsTab.tabId);
    const pollingId = randomUUID();
    const first = await poll(held, pollingId);
    expect(first.status).toBe(200);
    polling = new PollingTab(held, pollingId, first.cookie!);
    await registered(held, polling.tabId);
    const wsLater = await qrFor(held, wsTab.tabId, wsTab.cookie, 'ws: signed after the outage');
    const pollLater = await qrFor(held, polling.tabId, polling.cookie, 'poll: signed after the outage');
    await sign(await qrFor(held, wsTab.tabId, wsTab.cookie, 'ws: signed before'), ada);
    await sign(await qrFor(held, polling.tabId, polling.cookie, 'poll: signed before'), ada);
    const briefTab = await TestTab.open(brief.wsUrl);
    await registered(brief, briefTab.tabId);

    await server.down();
    // Signing and QR requests need the store: 503 as before.
    expectOutage(await post(held, '/QuickLogin', { mode: 'text', purpose: 'during', serviceId: '', tab: wsTab.tabId }, { cookie: wsTab.cookie }), 'QR request');
    expectOutage(await get(held, `/QuickLogin/Sign/${new URL(wsLater).pathname.split('/').pop()}`, { accept: 'application/json' }), 'sign info');

    // A Register and a first poll made now wait for the store (held service) ...
    const lateTab = await TestTab.open(held.wsUrl);
    const latePoll = poll(held, randomUUID());
    // ... and where the hold time is shorter than the outage, the channel says "try again later".
    const briefWs = await TestTab.open(brief.wsUrl);
    expect(await briefWs.closed()).toEqual({ code: 1013, reason: 'store_unavailable' });
    const briefPollId = randomUUID();
    expectOutage(await poll(brief, briefPollId), 'a first poll past the hold time');
    // A resuming poll of a tab the service does not hold here must look it up: past the hold time, 503.
    expectOutage(await poll(brief, randomUUID(), { cookie: briefTab.cookie, lastEventId: 1 }), 'a resuming poll past the hold time');
    // One of a tab held here for its session needs no store at all (docs/events.md "Tab bindings"): served as usual.
    expect((await poll(brief, briefTab.tabId, { cookie: briefTab.cookie, lastEventId: 1 })).status, 'a repeat poll of a tab held here').toBe(200);
    // The held Register is still waiting, its socket open.
    expect(lateTab.closeCode).toBeUndefined();
    expect(lateTab.instances).toEqual([]);

    await server.up();
    // The held Register and poll go through; the page saw no error.
    await lateTab.next('CheckServerInstance', 30_000);
    expect(lateTab.closeCode).toBeUndefined();
    const latePollAnswer = await latePoll;
    expect(latePollAnswer.status).toBe(200);
    expect(latePollAnswer.cookie).toBeDefined();
    // The refused ones are served again once they retry, with the same tab.
    const again = await TestTab.open(brief.wsUrl, { cookie: briefWs.cookie, tabId: briefWs.tabId });
    await again.next('CheckServerInstance');
    await until(async () => (await poll(brief, briefPollId)).status === 200, 'the brief poll served again');

    // Nothing lost: logins signed before the outage and codes issued before it but signed after reach their tabs.
    await sign(wsLater, ada);
    await sign(pollLater, ada);
    const lateUrl = await qrFor(held, lateTab.tabId, lateTab.cookie, 'registered during the outage');
    await sign(lateUrl, ada);
    await until(() => purposes(wsTab.events).length === 2, 'both logins at the WebSocket tab', 30_000);
    expect(purposes(wsTab.events).sort()).toEqual(['ws: signed after the outage', 'ws: signed before']);
    expect(wsTab.closeCode).toBeUndefined();
    await until(() => purposes(polling!.events).length === 2, 'both logins at the polling tab', 30_000);
    expect(purposes(polling.events).sort()).toEqual(['poll: signed after the outage', 'poll: signed before']);
    expect(purposes([await lateTab.next('SignatureReceived')])).toEqual(['registered during the outage']);
    await polling.stop();
    // Every answer the polling page had was a 200 (its polls waited the outage out) or an outage 503.
    for (const answer of polling.answers) {
      if (answer.status === 200) expect(Array.isArray(answer.body)).toBe(true);
      else expectOutage(answer, 'a poll during the outage');
    }
    for (const tab of [wsTab, lateTab, again, briefTab]) tab.close();
  }, 120_000);

  it('answers every route that needs the store 503 store_unavailable with Retry-After, and the rest as usual', async () => {
    // What a page, a signing app, a backend and an agent meet during the outage (docs/deployment.md "Failures").
    const tab = await TestTab.open(held.wsUrl);
    await registered(held, tab.tabId);
    const signUrl = await qrFor(held, tab.tabId, tab.cookie, 'issued before the sweep');
    const code = new URL(signUrl).pathname.split('/').pop()!;
    const account = { userName: `sweep-${randomUUID().slice(0, 8)}`, password: 'long enough password' };
    expect((await post(held, '/Agent/Account/Create', account)).status).toBe(201);
    const jwt = (await post(held, '/Agent/Account/Login', { ...account, seconds: 600 })).body.jwt as string;
    const bearer = { authorization: `Bearer ${jwt}` };

    await server.down();
    try {
      const needStore: [string, () => Promise<Answer>][] = [
        ['QR request', () => post(held, '/QuickLogin', { mode: 'text', purpose: 'p', serviceId: '', tab: tab.tabId }, { cookie: tab.cookie })],
        ['QR request of a new tab', () => post(held, '/QuickLogin', { mode: 'text', purpose: 'p', serviceId: '', tab: randomUUID() }, { cookie: tab.cookie })],
        ['backend registration', () => post(held, '/QuickLogin', { service: 'http://127.0.0.1:9/cb', sessionId: 's-1' })],
        ['sign info', () => get(held, `/QuickLogin/Sign/${code}`, { accept: 'application/json' })],
        ['signature', () => post(held, `/QuickLogin/Sign/${code}`, { legalId: 'x', signature: 'AAAA', decision: 'approve' })],
        ['account creation', () => post(held, '/Agent/Account/Create', { userName: 'during', password: 'long enough password' })],
        ['login', () => post(held, '/Agent/Account/Login', { ...account, seconds: 60 })],
        ['token refresh', () => post(held, '/Agent/Account/Refresh', { seconds: 60 }, bearer)],
        ['account info', () => get(held, '/Agent/Account/Info', bearer)],
        ['identity list', () => get(held, '/Agent/Legal/ListIdentities', bearer)],
        ['identity', () => get(held, '/Agent/Legal/GetIdentity?id=x', bearer)],
        ['PopMessages', () => post(held, '/Agent/Xmpp/PopMessages', { maxCount: 10 }, bearer)],
        ['SendTextMessage', () => post(held, '/Agent/Xmpp/SendTextMessage', { to: 'nobody@localhost', message: 'hi' }, bearer)],
        ['RegisterEventHandler', () => post(held, '/Agent/Xmpp/RegisterEventHandler', { function: 'OnChat', tabId: tab.tabId }, { ...bearer, cookie: tab.cookie })],
        ['JWKS', () => get(held, '/.well-known/jwks.json')],
        ['result keys', () => get(held, '/.well-known/tabwire/result-keys')],
      ];
      for (const [what, request] of needStore) expectOutage(await request(), what);
      // Readiness asks the store (a timed probe): the node is taken out of a balancer while it is down.
      expectOutage(await get(held, '/readyz'), 'readiness');
      // What needs no store: liveness, the event script, metrics, the approval page (its script asks for the JSON above).
      for (const path of ['/healthz', '/Events.js', '/metrics']) expect((await get(held, path)).status, path).toBe(200);
      // A refresh of a request this node stored before, and the PNG of its code, are derived without the store
      // (docs/signing.md "Derived codes"): a waiting page keeps its QR code through the outage.
      const refresh = await post(held, '/QuickLogin', { mode: 'text', purpose: 'issued before the sweep', serviceId: '', tab: tab.tabId }, { cookie: tab.cookie });
      expect(refresh.status, 'QR refresh of a stored request').toBe(200);
      expect(refresh.body.signUrl).not.toBe(signUrl);
      expect((await get(held, `/QuickLogin/Qr/${code}.png`)).status, 'QR image').toBe(200);
      expect((await get(held, `/QuickLogin/Sign/${code}`, { accept: 'text/html' })).status).toBe(200);
    } finally {
      await server.up();
    }
    tab.close();
  });
});
