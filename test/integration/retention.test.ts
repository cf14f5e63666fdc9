import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import type { Callback, CallbackState, LoginCode } from '../../src/store/stores.js';
import { get, post } from '../helpers/http.js';
import { startService, type TestService } from '../helpers/service.js';

const MINUTE = 60_000;

function code(now: number, expiresInMs: number, state: LoginCode['state'] = 'pending'): LoginCode {
  return {
    code: randomUUID().replaceAll('-', '').slice(0, 22),
    tabId: '',
    sessionHash: null,
    origin: null,
    purpose: 'Log in',
    propertyFilter: null,
    attachmentFilter: null,
    serviceId: '',
    agentApiTimeout: null,
    nonce: 'n',
    createdAt: now,
    expiresAt: now + expiresInMs,
    state,
    legalId: null,
    signedAt: null,
    scanSeconds: null,
    fetchedAt: null,
    bindingHash: null,
  };
}

function callback(now: number, deadlineInMs: number, state: CallbackState): Callback {
  return {
    id: `msg_${randomUUID()}`,
    serviceId: 's',
    tabId: '',
    tabSession: null,
    url: 'https://backend.test/cb',
    body: '{"AgentApiToken":"secret"}',
    webhookSecret: null,
    state,
    attempts: 1,
    // Far in the future: the deliverer must not pick these up while the test looks at them.
    nextAttemptAt: now + 10 * 86_400_000,
    deadline: now + deadlineInMs,
    lastError: null,
    createdAt: now,
    deliveredAt: state === 'delivered' ? now : null,
  };
}

async function metric(service: TestService, line: string): Promise<number> {
  const text = (await get(service, '/metrics')).body.toString() as string;
  const found = text.split('\n').find((l) => l.startsWith(`${line} `));
  return found === undefined ? 0 : Number(found.slice(line.length + 1));
}

/** Callbacks to 127.0.0.1 pass the address policy (the registrations are never called). */
const start = (overrides: Parameters<typeof startService>[0]) => startService({ callbackAllowedHosts: ['127.0.0.1'], ...overrides });

describe('retention purge (expired registrations, codes and finished callbacks were never deleted)', () => {
  let service: TestService;
  afterEach(async () => service.close());

  it('with a moved clock, removes what is past its window and nothing else', async () => {
    service = await start({
      codeValiditySeconds: 300,
      codeRetentionSeconds: 600,
      attachmentUrlSeconds: 300,
      serviceValiditySeconds: 300,
      registrationRetentionSeconds: 600,
      callbackRetentionSeconds: 600,
    });
    const { store, clock } = service;
    const t0 = clock.now();

    // Codes: expiring at t0+5 min (gone after t0+15 min) and at t0+20 min (kept).
    const oldCode = code(t0, 5 * MINUTE);
    const youngCode = code(t0, 20 * MINUTE);
    await store.codes.insert(oldCode);
    await store.codes.insert(youngCode);

    // Registrations: made through the API, so they are exactly what a backend leaves behind.
    const register = async () => (await post(service, '/QuickLogin', { service: 'https://127.0.0.1:9/cb', sessionId: randomUUID() })).body.serviceId as string;
    const oldRegistration = await register(); // expires t0+5 min, purged after t0+15 min
    clock.advance(10 * MINUTE);
    const youngRegistration = await register(); // expires t0+15 min, kept until t0+25 min

    // Callbacks, whatever their state, go callbackRetentionSeconds after their deadline.
    const delivered = callback(t0, 1 * MINUTE, 'delivered');
    const gone = callback(t0, 2 * MINUTE, 'gone');
    const abandoned = callback(t0, 3 * MINUTE, 'pending');
    const recent = callback(t0, 10 * MINUTE, 'delivered');
    for (const c of [delivered, gone, abandoned, recent]) await store.callbacks.insert(c);

    // OpenID Provider records go at expiry: nothing reads them after it.
    const oidc = (id: string, expiresInMs: number) => ({
      model: 'AuthorizationCode', id, payload: '{}', grantId: 'g', uid: null, expiresAt: t0 + expiresInMs,
    });
    await store.oidcEntries.upsert(oidc('old-code', 16 * MINUTE - 1));
    await store.oidcEntries.upsert(oidc('young-code', 20 * MINUTE));

    // QR requests (derived codes' rows) go a minute after they expire: no code of theirs is valid by then.
    const qrRequest = (id: number, expiresAt: number) => ({
      id, kid: 'k', tabId: '', sessionHash: null, origin: null, purpose: 'p', propertyFilter: null, attachmentFilter: null,
      serviceId: '', agentApiTimeout: null, scanSeconds: null, validityMs: 5 * MINUTE, createdAt: t0, expiresAt,
    });
    expect(await store.qrRequests.insertIfAbsent(qrRequest(1, t0 + 15 * MINUTE - 1))).toBe(true);
    expect(await store.qrRequests.insertIfAbsent(qrRequest(2, t0 + 15 * MINUTE + 1))).toBe(true);

    // Results written before a stop go when their replay window ends (their expiry).
    await store.writtenResults.remember([
      { key: 'r-old', expiresAt: t0 + 16 * MINUTE - 1 },
      { key: 'r-young', expiresAt: t0 + 20 * MINUTE },
    ]);

    clock.advance(6 * MINUTE); // t0+16 min
    const deleted = await service.app.tabwire.purge.run();
    expect(deleted).toEqual({ codes: 1, registrations: 1, callbacks: 3, oidc: 1, qr_requests: 1, written_results: 1, tab_bindings: 0 });
    expect(await store.writtenResults.writtenAmong(['r-old', 'r-young'], t0)).toEqual(new Set(['r-young']));
    expect(await store.qrRequests.get(1)).toBeUndefined();
    expect(await store.qrRequests.get(2)).toBeDefined();

    expect(await store.codes.get(oldCode.code)).toBeUndefined();
    expect(await store.codes.get(youngCode.code)).toBeDefined();
    expect(await store.services.get(oldRegistration)).toBeUndefined();
    expect(await store.services.get(youngRegistration)).toBeDefined();
    for (const c of [delivered, gone, abandoned]) expect(await store.callbacks.get(c.id)).toBeUndefined();
    expect(await store.callbacks.get(recent.id)).toBeDefined();
    expect(await store.oidcEntries.find('AuthorizationCode', 'young-code', clock.now())).toBeDefined();
    expect(await store.oidcEntries.find('AuthorizationCode', 'old-code', t0)).toBeUndefined(); // deleted, not just expired
    expect(await metric(service, 'tabwire_purged_total{kind="callbacks"}')).toBe(3);
    expect(await metric(service, 'tabwire_purged_total{kind="oidc"}')).toBe(1);

    // Running again deletes nothing more; later, the rest goes too.
    expect(await service.app.tabwire.purge.run()).toEqual({ codes: 0, registrations: 0, callbacks: 0, oidc: 0, qr_requests: 0, written_results: 0, tab_bindings: 0 });
    clock.advance(20 * MINUTE);
    expect(await service.app.tabwire.purge.run()).toEqual({ codes: 1, registrations: 1, callbacks: 1, oidc: 1, qr_requests: 1, written_results: 1, tab_bindings: 0 });
  }, 30_000);

  it('keeps what other features still need: a registration while codes issued under it may be signed, an approved code while its attachments are served', async () => {
    service = await start({
      codeValiditySeconds: 600,
      codeRetentionSeconds: 0,
      attachmentUrlSeconds: 900,
      serviceValiditySeconds: 60,
      registrationRetentionSeconds: 0,
      callbackRetentionSeconds: 0,
    });
    const { store, clock } = service;
    const registration = (await post(service, '/QuickLogin', { service: 'https://127.0.0.1:9/cb', sessionId: 's' })).body.serviceId as string;
    const approved = code(clock.now(), 600_000, 'approved');
    await store.codes.insert(approved);
    // The registration expired 5 min ago, but a code issued just before could still be signed for 5 more minutes.
    clock.advance(6 * MINUTE);
    await service.app.tabwire.purge.run();
    expect(await store.services.get(registration)).toBeDefined();
    // The code expired 5 min ago; its attachment links live 15 min after the signature.
    clock.advance(9 * MINUTE);
    await service.app.tabwire.purge.run();
    expect(await store.services.get(registration)).toBeUndefined();
    expect(await store.codes.get(approved.code)).toBeDefined();
    clock.advance(11 * MINUTE);
    await service.app.tabwire.purge.run();
    expect(await store.codes.get(approved.code)).toBeUndefined();
  });

  it('runs by itself every purgeIntervalSeconds', async () => {
    service = await start({ purgeIntervalSeconds: 1, registrationRetentionSeconds: 0, serviceValiditySeconds: 10, codeValiditySeconds: 5 });
    const registration = (await post(service, '/QuickLogin', { service: 'https://127.0.0.1:9/cb', sessionId: 's' })).body.serviceId as string;
    service.clock.advance(MINUTE);
    const deadline = Date.now() + 10_000;
    while ((await service.store.services.get(registration)) !== undefined) {
      if (Date.now() > deadline) throw new Error('the purge never ran');
      await new Promise((r) => setTimeout(r, 50));
    }
  });
});
