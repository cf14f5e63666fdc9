import fc from 'fast-check';
import { afterAll, beforeAll, expect } from 'vitest';
import { fetchSignInfo, postDecision } from '../../src/cli/signer.js';
import { privateKeyFromPem } from '../../src/identity/keys.js';
import { post, registered } from '../helpers/http.js';
import { addClient, approve, authorize, complete, CookieJar, exchange as tokenRequest, followToRp, interactionUid, loginPageCode, pkce } from '../helpers/oidc-flow.js';
import { makeIdentity, startService, testResolver, type TestService } from '../helpers/service.js';
import { TestTab } from '../helpers/tab.js';
import { prepareContext, releaseContext, type FuzzContext } from './context.js';
import { runCase, type FuzzCase } from './run-case.js';
import { exchange, type Target } from './wire.js';

/**
 * The service the fuzz tests drive, and what they check around the generated input: that it
 * still answers /healthz, and that a normal login (tab, QR code, signature, result) still works.
 */

/** A callback host name the test resolver maps to a public address, so backend registrations can succeed. */
const CALLBACK_HOST = 'backend.fuzz.test';

/**
 * Seed and runs per property. The default seed is fixed so the suite is the same on every run;
 * FUZZ_SEED=<n> replays a seed fast-check printed, FUZZ_RUNS=<n> runs more.
 */
export const FUZZ_SEED = Number(process.env.FUZZ_SEED ?? 9_2024);
export const fuzzRuns = (fallback: number): number => Number(process.env.FUZZ_RUNS ?? fallback);

export interface FuzzService {
  service: TestService;
  ctx: FuzzContext;
  target: Target;
}

export async function startFuzzService(): Promise<FuzzService> {
  // openRegistration: the fuzzer makes its own account and reaches the handlers behind the bearer guard.
  // A 1 s long-poll hold keeps held polls from dominating the run time.
  const service = await startService({ openRegistration: true, longPollHoldSeconds: 1 }, { resolve: testResolver({ [CALLBACK_HOST]: ['93.184.216.34'] }) });
  const { config } = service.app.tabwire;
  // A registered relying party, so the context holds a live OpenID Connect login (docs/oidc.md).
  const client = await addClient(service.store, { redirectUris: ['https://rp.fuzz.test/callback'], postLogoutRedirectUris: ['https://rp.fuzz.test/logged-out'] });
  const ctx = await prepareContext({
    baseUrl: service.baseUrl,
    componentDomain: config.xmppComponentDomain,
    allowedOrigins: [...config.allowedOrigins],
    callbackHosts: [CALLBACK_HOST],
    oidcClient: { clientId: client.clientId, clientSecret: client.clientSecret!, redirectUris: client.redirectUris, postLogoutRedirectUris: client.postLogoutRedirectUris },
  });
  expect(ctx.jwt, 'the fuzz account logs in').toBeDefined();
  expect(ctx.identityId, 'the fuzz account has an identity').toBeDefined();
  expect(ctx.serviceId, 'the backend registration succeeds').toBeDefined();
  expect(ctx.oidc?.uid, 'the OpenID Connect login reaches its login page').toBeDefined();
  return { service, ctx, target: { host: ctx.host, port: ctx.port } };
}

/** A FuzzService started before the calling file's tests and released after them (filled in once beforeAll has run). */
export function useFuzzService(): FuzzService {
  const fuzz = {} as FuzzService;
  beforeAll(async () => {
    Object.assign(fuzz, await startFuzzService());
  });
  afterAll(async () => {
    releaseContext(fuzz.ctx);
    await fuzz.service.close();
  });
  return fuzz;
}

/**
 * The property of every fuzz test: `numRuns` generated cases (seed FUZZ_SEED) each break no rule of the
 * oracle, or fast-check fails with the smallest failing request it found; then the service is still healthy.
 */
export async function expectNoFindings(fuzz: FuzzService, cases: fc.Arbitrary<FuzzCase>, numRuns: number): Promise<void> {
  await fc.assert(
    fc.asyncProperty(cases, async (c) => {
      const seen = await runCase(fuzz.target, fuzz.ctx, c, { timeoutMs: 10_000 });
      if (seen.finding) throw new Error(`${seen.finding.kind} (${seen.finding.signature}): ${seen.finding.detail}\n  request: ${seen.request}`);
    }),
    { numRuns, seed: FUZZ_SEED },
  );
  await expectHealthy(fuzz.target);
}

/** The service answers /healthz with 200 (over a fresh connection, as the fuzzer's own requests go). */
export async function expectHealthy(target: Target): Promise<void> {
  const outcome = await exchange(target, { method: 'GET', target: '/healthz', headers: [] });
  expect(outcome.kind === 'answer' ? outcome.answer.status : outcome.reason).toBe(200);
}

/** A tab registers over WebSocket, asks for a QR code with its session cookie, a person signs, the tab gets SignatureReceived. */
export async function expectNormalLogin(service: TestService): Promise<void> {
  const person = await makeIdentity(service, { FIRST: 'After', LAST: 'Fuzzing' });
  const tab = await TestTab.open(service.wsUrl);
  try {
    await registered(service, tab.tabId);
    const qr = await post(service, '/QuickLogin', { mode: 'text', purpose: 'After fuzzing', serviceId: '', tab: tab.tabId }, { cookie: tab.cookie });
    expect(qr.status).toBe(200);
    const info = await fetchSignInfo(qr.body.signUrl);
    const answer = await postDecision(qr.body.signUrl, info, person.identity.id, privateKeyFromPem(person.privateKeyPem), 'approve');
    expect(answer.state).toBe('approved');
    const event = await tab.next('SignatureReceived');
    expect(event.data).toMatchObject({ Id: person.identity.id, Properties: { FIRST: 'After', LAST: 'Fuzzing' }, Purpose: 'After fuzzing' });
  } finally {
    tab.close();
  }
}

/** A relying party's login (docs/oidc.md): authorization, the login page's QR code, the approval, the code, the tokens. */
export async function expectNormalOidcLogin(service: TestService): Promise<void> {
  const person = await makeIdentity(service, { FIRST: 'Oidc', LAST: 'AfterFuzzing' });
  const client = await addClient(service.store, { redirectUris: ['https://rp.after.test/cb'] });
  const jar = new CookieJar();
  const { verifier, challenge } = pkce();
  const started = await authorize(service.baseUrl, jar, { client, challenge, scope: 'openid profile' });
  expect(started.status).toBe(303);
  const uid = interactionUid(started.headers.get('location')!);
  const { tab, signUrl, status } = await loginPageCode(service.baseUrl, service.wsUrl, jar, uid, service.publicBaseUrl);
  try {
    expect(status).toBe(200);
    expect((await approve(signUrl, person.identity.id, privateKeyFromPem(person.privateKeyPem))).answer.state).toBe('approved');
    await tab.next('SignatureReceived');
    const done = await complete(service.baseUrl, jar, uid, tab.tabId, service.publicBaseUrl);
    expect(done.status).toBe(200);
    const back = await followToRp(service.baseUrl, jar, done.body.redirectTo!);
    const tokens = await tokenRequest(service.baseUrl, client, { code: back.searchParams.get('code')!, redirect_uri: 'https://rp.after.test/cb', code_verifier: verifier });
    expect(tokens.status).toBe(200);
    expect(tokens.body.id_token).toEqual(expect.any(String));
  } finally {
    tab.close();
  }
}
