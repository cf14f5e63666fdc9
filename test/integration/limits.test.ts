import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../../src/agent/api-keys.js';
import { applicationMessage, type IdentityApplication } from '../../src/identity/application.js';
import { generateEd25519, privateKeyFromPem, signEd25519 } from '../../src/identity/keys.js';
import type { Identity } from '../../src/store/stores.js';
import { get, post, registered, type Answer } from '../helpers/http.js';
import { addClient } from '../helpers/oidc-flow.js';
import { startService, type TestService } from '../helpers/service.js';
import { TestTab } from '../helpers/tab.js';

/** Every 429 of a limit: problem+json from the catalogue, with a Retry-After within the one-minute window. */
function expectLimited(answer: Answer, limit?: string): void {
  expect(answer.status).toBe(429);
  expect(answer.contentType).toContain('application/problem+json');
  expect(answer.body.code).toBe('rate_limited');
  if (limit !== undefined) expect(answer.body.limit).toBe(limit);
  const retryAfter = Number(answer.headers.get('retry-after'));
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(60);
}

async function metric(service: TestService, line: string): Promise<number> {
  const text = (await get(service, '/metrics')).body.toString() as string;
  const found = text.split('\n').find((l) => l.startsWith(`${line} `));
  return found === undefined ? 0 : Number(found.slice(line.length + 1));
}

const qr = (service: TestService, tab: TestTab, headers: Record<string, string> = {}) =>
  post(service, '/QuickLogin', { mode: 'text', purpose: 'Log in', serviceId: '', tab: tab.tabId }, { cookie: tab.cookie, ...headers });

async function openTab(service: TestService, cookie?: string): Promise<TestTab> {
  const tab = await TestTab.open(service.wsUrl, cookie === undefined ? {} : { cookie });
  await registered(service, tab.tabId);
  return tab;
}

describe('QR request limits (10,000 QR requests from one session were all served)', () => {
  let service: TestService;
  const tabs: TestTab[] = [];
  afterEach(async () => {
    for (const tab of tabs.splice(0)) tab.close();
    await service.close();
  });

  it('refuses QR requests past the per-session limit with 429 + Retry-After; another session is not affected', async () => {
    service = await startService({ qrRequestsPerSessionPerMinute: 5 });
    const tab = await openTab(service);
    tabs.push(tab);
    // A second tab of the same session shares the session's count.
    const sibling = await openTab(service, tab.cookie);
    tabs.push(sibling);
    for (let i = 0; i < 4; i++) expect((await qr(service, tab)).status).toBe(200);
    expect((await qr(service, sibling)).status).toBe(200);
    expectLimited(await qr(service, sibling), 'qr_session');
    expectLimited(await qr(service, tab), 'qr_session');
    const other = await openTab(service);
    tabs.push(other);
    expect((await qr(service, other)).status).toBe(200);
    expect(await metric(service, 'tabwire_rate_limited_total{limit="qr_session"}')).toBe(2);
  });

  it('refuses QR requests past the per-address limit, whatever session they carry', async () => {
    service = await startService({ qrRequestsPerAddressPerMinute: 6 });
    for (let i = 0; i < 3; i++) tabs.push(await openTab(service));
    for (const tab of tabs) {
      expect((await qr(service, tab)).status).toBe(200);
      expect((await qr(service, tab)).status).toBe(200);
    }
    for (const tab of tabs) expectLimited(await qr(service, tab), 'qr_address');
    expect(await metric(service, 'tabwire_rate_limited_total{limit="qr_address"}')).toBe(3);
  });

  it('does not trust X-Forwarded-For unless trustProxy is on', async () => {
    service = await startService({ qrRequestsPerAddressPerMinute: 2 });
    const tab = await openTab(service);
    tabs.push(tab);
    const spoofed = async (n: number) => qr(service, tab, { 'x-forwarded-for': `203.0.113.${n}` });
    expect((await spoofed(1)).status).toBe(200);
    expect((await spoofed(2)).status).toBe(200);
    expectLimited(await spoofed(3), 'qr_address');
  });

  it('with trustProxy, counts the forwarded client address', async () => {
    service = await startService({ qrRequestsPerAddressPerMinute: 2, trustProxy: true });
    const tab = await openTab(service);
    tabs.push(tab);
    const from = (address: string) => qr(service, tab, { 'x-forwarded-for': address });
    expect((await from('203.0.113.1')).status).toBe(200);
    expect((await from('203.0.113.1')).status).toBe(200);
    expectLimited(await from('203.0.113.1'), 'qr_address');
    expect((await from('203.0.113.2')).status).toBe(200);
  });

  it('the defaults never limit a person with four tabs that each refresh their code every 2 s for a minute', async () => {
    service = await startService();
    const first = await openTab(service);
    tabs.push(first);
    for (let i = 0; i < 3; i++) tabs.push(await openTab(service, first.cookie));
    // A minute's worth at once (30 per tab): the fixed window sees them all, the worst case.
    const answers = await Promise.all(tabs.flatMap((tab) => Array.from({ length: 30 }, () => qr(service, tab))));
    expect(answers.map((a) => a.status)).toEqual(answers.map(() => 200));
  });
});

describe('backend registration limits (5,000 registrations were accepted from one address)', () => {
  let service: TestService;
  afterAll(async () => service.close());

  it('refuses registrations past the per-address limit with 429 + Retry-After', async () => {
    service = await startService({ registrationsPerAddressPerMinute: 3, callbackAllowedHosts: ['127.0.0.1'] });
    const register = () => post(service, '/QuickLogin', { service: 'https://127.0.0.1:9/callback', sessionId: randomUUID() });
    for (let i = 0; i < 3; i++) expect((await register()).status).toBe(200);
    expectLimited(await register(), 'registration_address');
    // QR requests are counted apart from registrations.
    const tab = await openTab(service);
    expect((await qr(service, tab)).status).toBe(200);
    tab.close();
    expect(await metric(service, 'tabwire_rate_limited_total{limit="registration_address"}')).toBe(1);
  });
});

describe('login throttling under concurrency (200 concurrent wrong passwords gave 68 × 401 with a limit of 5)', () => {
  let service: TestService;
  let apiKey: string;
  beforeAll(async () => {
    service = await startService();
    apiKey = (await createApiKey(service.store.apiKeys, service.clock, 'tests')).key;
  });
  afterAll(async () => service.close());

  const create = (userName: string) => post(service, '/Agent/Account/Create', { userName, password: 'correct horse battery' }, { 'x-api-key': apiKey });
  const login = (userName: string, password: string) => post(service, '/Agent/Account/Login', { userName, password, seconds: 60 });

  it('200 concurrent wrong passwords for one user: at most 5 answers 401, the rest 429 with Retry-After', async () => {
    await create('frank');
    const answers = await Promise.all(Array.from({ length: 200 }, () => login('frank', 'wrong password')));
    const unauthorized = answers.filter((a) => a.status === 401);
    const limited = answers.filter((a) => a.status === 429);
    expect(unauthorized.length).toBeLessThanOrEqual(5);
    expect(unauthorized.length + limited.length).toBe(200);
    for (const answer of limited) expectLimited(answer);
    // The right password is refused too until the window ends, then works.
    expectLimited(await login('frank', 'correct horse battery'));
    service.clock.advance(60_000);
    expect((await login('frank', 'correct horse battery')).status).toBe(200);
    expect(await metric(service, 'tabwire_rate_limited_total{limit="login_account"}')).toBeGreaterThanOrEqual(196);
  });

  it('concurrent wrong passwords for many user names from one address: at most the address limit answers 401', async () => {
    const strict = await startService({ loginAttemptsPerAddress: 10 });
    try {
      const answers = await Promise.all(
        Array.from({ length: 100 }, (_, i) => post(strict, '/Agent/Account/Login', { userName: `spray${i}`, password: 'wrong password', seconds: 60 })),
      );
      expect(answers.filter((a) => a.status === 401).length).toBeLessThanOrEqual(10);
      const limited = answers.filter((a) => a.status === 429);
      expect(limited.length).toBeGreaterThanOrEqual(90);
      for (const answer of limited) expectLimited(answer);
      expect(await metric(strict, 'tabwire_rate_limited_total{limit="login_address"}')).toBe(limited.length);
    } finally {
      await strict.close();
    }
  });

  it('a correct login gives its slots back: a person who logs in often is never throttled', async () => {
    const strict = await startService({ loginAttemptsPerAccount: 2, loginAttemptsPerAddress: 3 });
    try {
      const { key } = await createApiKey(strict.store.apiKeys, strict.clock, null);
      await post(strict, '/Agent/Account/Create', { userName: 'grace', password: 'correct horse battery' }, { 'x-api-key': key });
      for (let i = 0; i < 6; i++) {
        const answer = await post(strict, '/Agent/Account/Login', { userName: 'grace', password: 'correct horse battery', seconds: 60 });
        expect(answer.status).toBe(200);
      }
    } finally {
      await strict.close();
    }
  });
});

describe('identities per account and ListIdentities pages (300 applications made a 15.6 MB list)', () => {
  let service: TestService;
  let jwt: string;
  let accountId: string;
  beforeAll(async () => {
    service = await startService({ identitiesPerAccount: 3, identityPageSize: 2 });
    const { key } = await createApiKey(service.store.apiKeys, service.clock, null);
    await post(service, '/Agent/Account/Create', { userName: 'ada', password: 'analytical engine' }, { 'x-api-key': key });
    jwt = (await post(service, '/Agent/Account/Login', { userName: 'ada', password: 'analytical engine', seconds: 3600 })).body.jwt;
    accountId = (await service.store.accounts.byUserName('ada'))!.id;
  });
  afterAll(async () => service.close());

  const auth = () => ({ authorization: `Bearer ${jwt}` });

  function apply(first: string): Promise<Answer> {
    const pair = generateEd25519();
    const application: IdentityApplication = { properties: { FIRST: first }, publicKey: pair.publicKey };
    const signature = signEd25519(privateKeyFromPem(pair.privateKeyPem), applicationMessage('ada', application));
    return post(service, '/Agent/Legal/ApplyId', { ...application, signature }, auth());
  }

  it('concurrent applications never overshoot the limit; past it ApplyId answers 507; a rejected identity frees its slot', async () => {
    const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => apply(`Ada${i}`)));
    const created = answers.filter((a) => a.status === 201);
    expect(created.length).toBeGreaterThanOrEqual(1);
    expect(created.length).toBeLessThanOrEqual(3);
    for (const refused of answers.filter((a) => a.status !== 201)) {
      expect([refused.status, refused.body.code]).toEqual([507, 'identity_limit_reached']);
      expect(refused.contentType).toContain('application/problem+json');
    }
    while ((await service.store.identities.list(accountId)).length < 3) expect((await apply('More')).status).toBe(201);
    const full = await apply('Too many');
    expect([full.status, full.body.code]).toEqual([507, 'identity_limit_reached']);
    expect(await service.store.identities.list(accountId)).toHaveLength(3);

    const [oldest] = await service.store.identities.list(accountId);
    await service.store.identities.transition(oldest!.id, 'Created', 'Rejected', service.clock.now());
    expect((await apply('After rejection')).status).toBe(201);
    expect(await metric(service, 'tabwire_quota_exceeded_total{limit="identities_per_account"}')).toBeGreaterThanOrEqual(1);
  });

  it('lists one page at a time: the first page without paging fields, then `next` until the end', async () => {
    // Five identities of this account (inserted directly: the quota guards ApplyId only), two at one instant.
    const base = service.clock.now();
    for (const [i, created] of [base + 1, base + 2, base + 2, base + 3, base + 4].entries()) {
      await service.store.identities.insert(identity(`page-${i}@legal.test`, accountId, created));
    }
    const all = (await service.store.identities.list(accountId)).map((i) => i.id);
    const seen: string[] = [];
    let answer = await get(service, '/Agent/Legal/ListIdentities', auth());
    expect(answer.status).toBe(200);
    expect(answer.body.identities).toHaveLength(2);
    for (;;) {
      seen.push(...answer.body.identities.map((i: { Id: string }) => i.Id));
      if (answer.body.next === undefined) break;
      answer = await get(service, `/Agent/Legal/ListIdentities?after=${answer.body.next}`, auth());
      expect(answer.status).toBe(200);
      expect(answer.body.identities.length).toBeLessThanOrEqual(2);
    }
    expect(seen).toEqual(all);

    const one = await get(service, '/Agent/Legal/ListIdentities?limit=1', auth());
    expect(one.body.identities.map((i: { Id: string }) => i.Id)).toEqual(all.slice(0, 1));
    // Larger pages than identityPageSize are cut to it.
    expect((await get(service, '/Agent/Legal/ListIdentities?limit=500', auth())).body.identities).toHaveLength(2);
    for (const bad of ['limit=0', 'limit=x', 'after=bm90IGEgY3Vyc29y', 'after=%2F%2F']) {
      const refused = await get(service, `/Agent/Legal/ListIdentities?${bad}`, auth());
      expect([refused.status, refused.body.code]).toEqual([400, 'validation_failed']);
    }
  });
});

function identity(id: string, accountId: string, created: number): Identity {
  return {
    id,
    provider: 'legal.test',
    state: 'Created',
    created,
    updated: created,
    from: created,
    to: created + 86_400_000,
    properties: { FIRST: id },
    attachments: [],
    clientKeyName: 'ed25519',
    clientPubKey: 'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=',
    accountId,
  };
}

describe('OpenID Provider token endpoint limit (docs/oidc.md "Errors and limits")', () => {
  let service: TestService;
  afterAll(async () => service.close());

  it('refuses token requests past the per-address limit with 429 problem+json + Retry-After, counted by the metric', async () => {
    service = await startService({ oidcTokenRequestsPerAddressPerMinute: 3 });
    const client = await addClient(service.store);
    // Codes the provider never issued: each request reaches the library and is refused there as RFC 6749 §5.2 says.
    const token = () =>
      fetch(`${service.baseUrl}/oidc/token`, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${Buffer.from(`${client.clientId}:${client.clientSecret!}`).toString('base64')}`,
        },
        body: new URLSearchParams({ grant_type: 'authorization_code', code: randomUUID(), redirect_uri: client.redirectUris[0]! }),
      });
    for (let i = 0; i < 3; i++) {
      const refused = await token();
      expect([refused.status, ((await refused.json()) as { error?: string }).error]).toEqual([400, 'invalid_grant']);
    }
    const limited = await token();
    expectLimited({ status: limited.status, contentType: limited.headers.get('content-type') ?? '', headers: limited.headers, body: await limited.json() }, 'oidc_token_address');
    // The library's other endpoints are not counted: discovery still answers.
    expect((await fetch(`${service.baseUrl}/oidc/.well-known/openid-configuration`)).status).toBe(200);
    expect(await metric(service, 'tabwire_rate_limited_total{limit="oidc_token_address"}')).toBe(1);
  });
});
