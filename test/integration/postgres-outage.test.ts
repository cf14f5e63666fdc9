import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchSignInfo, postDecision } from '../../src/cli/signer.js';
import { privateKeyFromPem } from '../../src/identity/keys.js';
import { get, post, registered, type Answer } from '../helpers/http.js';
import { startPostgres, type PostgresServer } from '../helpers/postgres.js';
import { makeIdentity, startService, type TestService } from '../helpers/service.js';
import { TestTab } from '../helpers/tab.js';

// PostgreSQL stops and comes back under a running service (docs/store.md "Outages"): requests that need
// the store answer 503 problem+json `store_unavailable` meanwhile, nothing committed before is lost, and
// the service resumes by itself, with no pooled connection left broken. A private server: this test stops it.

let server: PostgresServer;
let service: TestService;
const POOL = 3;

beforeAll(async () => {
  server = await startPostgres();
  service = await startService({ openRegistration: true, databasePoolSize: POOL }, { databaseUrl: await server.createDatabase() });
});
afterAll(async () => {
  await service?.close();
  await server?.stop();
});

const expectUnavailable = (answer: Answer) => {
  expect(answer.status).toBe(503);
  expect(answer.contentType).toMatch(/^application\/problem\+json/);
  expect(answer.body).toMatchObject({ code: 'store_unavailable', status: 503 });
  expect(answer.headers.get('retry-after')).toBe('1');
};

describe('a PostgreSQL outage', () => {
  it('answers 503 store_unavailable while PostgreSQL is down, and serves again by itself when it is back', async () => {
    const ada = await makeIdentity(service, { FIRST: 'Ada' });
    const tab = await TestTab.open(service.wsUrl);
    await registered(service, tab.tabId);
    const qrBody = { mode: 'text', purpose: 'Before the outage', serviceId: '', tab: tab.tabId };
    // Fill the pool, so every pooled connection is one PostgreSQL will drop.
    await Promise.all(Array.from({ length: POOL * 2 }, () => post(service, '/QuickLogin', qrBody, { cookie: tab.cookie })));
    const before = await post(service, '/QuickLogin', qrBody, { cookie: tab.cookie });
    expect(before.status).toBe(200);
    expect((await post(service, '/Agent/Account/Create', { userName: 'before', password: 'long enough password' })).status).toBe(201);

    await server.down();
    // A new request needs the store; a refresh of the one stored before does not (docs/signing.md "Derived codes").
    const newRequest = { ...qrBody, purpose: 'During the outage' };
    expectUnavailable(await post(service, '/QuickLogin', newRequest, { cookie: tab.cookie }));
    expect((await post(service, '/QuickLogin', qrBody, { cookie: tab.cookie })).status).toBe(200);
    expectUnavailable(await post(service, '/Agent/Account/Create', { userName: 'during', password: 'long enough password' }));
    expectUnavailable(await get(service, '/.well-known/jwks.json'));
    expectUnavailable(await get(service, '/.well-known/tabwire/result-keys'));
    // What needs no store still answers.
    expect((await get(service, '/healthz')).status).toBe(200);

    await server.up();
    const deadline = Date.now() + 15_000;
    let after: Answer;
    for (;;) {
      after = await post(service, '/QuickLogin', newRequest, { cookie: tab.cookie });
      if (after.status === 200 || Date.now() > deadline) break;
      expectUnavailable(after);
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(after.status).toBe(200);
    // More requests at once than the pool has connections: none meets a connection broken by the outage.
    const burst = await Promise.all(Array.from({ length: POOL * 4 }, () => post(service, '/QuickLogin', qrBody, { cookie: tab.cookie })));
    expect(burst.map((a) => a.status)).toEqual(burst.map(() => 200));

    // Nothing committed before the outage was lost: the account logs in, the code issued before is signed.
    expect((await post(service, '/Agent/Account/Login', { userName: 'before', password: 'long enough password', seconds: 60 })).status).toBe(200);
    expect((await post(service, '/Agent/Account/Create', { userName: 'during', password: 'long enough password' })).status).toBe(201);
    const info = await fetchSignInfo(before.body.signUrl);
    expect((await postDecision(before.body.signUrl, info, ada.identity.id, privateKeyFromPem(ada.privateKeyPem), 'approve')).state).toBe('approved');
    expect((await tab.next('SignatureReceived')).data).toMatchObject({ Purpose: 'Before the outage' });
    tab.close();
  });
});
