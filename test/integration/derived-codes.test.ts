import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { privateKeyFromPem, signEd25519 } from '../../src/identity/keys.js';
import { signedMessage } from '../../src/quicklogin/challenge.js';
import { CODE_KEY_PURPOSE, rotateCodeKey } from '../../src/quicklogin/code-keys.js';
import { CODE_PATTERN } from '../../src/quicklogin/codes.js';
import type { Store } from '../../src/store/stores.js';
import { postgresDatabase } from '../helpers/backends.js';
import { get, post, registered, type Answer } from '../helpers/http.js';
import { makeIdentity, startService, type StartOptions, type TestService } from '../helpers/service.js';
import { TestTab } from '../helpers/tab.js';

// Derived login codes (docs/signing.md "Derived codes") on a real SQLite file and a real PostgreSQL: a refresh
// of a known request calls the store not at all; a code becomes a row when first resolved; forged, altered and
// expired codes are refused; rotation and restart leave issued codes valid until they expire.

const VALIDITY_MS = 300_000;

/**
 * The node's own sweeps, on timers whatever the requests do: the callback outbox (callbacks/deliverer.ts) and the
 * result outbox (quicklogin/result-outbox.ts) each ask the store about once a second.
 */
const SWEEPS = new Set(['callbacks.claimDue', 'codes.unpublished']);

type StoreCalls = { calls: () => string[]; reset: () => void };
/** The counter of each store counted: a store's methods are wrapped once, and a later count starts it again. */
const counters = new WeakMap<Store, StoreCalls>();

/** Counts every call of every store method but the sweeps' (each call is one or more SQL statements); `calls()` lists them. */
function countStoreCalls(store: Store): StoreCalls {
  const known = counters.get(store);
  if (known) {
    known.reset();
    return known;
  }
  let calls: string[] = [];
  for (const [area, part] of Object.entries(store)) {
    if (typeof part !== 'object' || part === null) continue;
    const target = part as Record<string, unknown>;
    for (let proto = Object.getPrototypeOf(target); proto && proto !== Object.prototype; proto = Object.getPrototypeOf(proto)) {
      for (const name of Object.getOwnPropertyNames(proto)) {
        const method = target[name];
        if (name === 'constructor' || typeof method !== 'function' || Object.hasOwn(target, name)) continue;
        target[name] = (...args: unknown[]) => {
          if (!SWEEPS.has(`${area}.${name}`)) calls.push(`${area}.${name}`);
          return (method as (...a: unknown[]) => unknown).apply(target, args);
        };
      }
    }
  }
  const counter = { calls: () => calls, reset: () => void (calls = []) };
  counters.set(store, counter);
  return counter;
}

const codeOf = (answer: Answer): string => new URL(answer.body.signUrl as string).pathname.split('/').at(-1)!;

function expectProblem(answer: Answer, status: number, code: string): void {
  expect(answer.status).toBe(status);
  expect(answer.contentType).toMatch(/^application\/problem\+json/);
  expect(answer.body.code).toBe(code);
}

/** `code` with the character at `at` replaced by another of the alphabet. */
const altered = (code: string, at: number): string => code.slice(0, at) + (code[at] === 'A' ? 'B' : 'A') + code.slice(at + 1);

const fetchJson = (s: TestService, code: string, binding?: string) =>
  get(s, `/QuickLogin/Sign/${code}`, { accept: 'application/json', ...(binding === undefined ? {} : { 'tabwire-binding': binding }) });

function signatureBody(challenge: string, who: Awaited<ReturnType<typeof makeIdentity>>, decision: 'approve' | 'reject' = 'approve') {
  return { legalId: who.identity.id, signature: signEd25519(privateKeyFromPem(who.privateKeyPem), signedMessage(challenge, who.identity.id, decision)), decision };
}

const BACKENDS: { name: string; options: () => Promise<StartOptions> }[] = [
  { name: 'SQLite', options: async () => ({}) },
  { name: 'PostgreSQL', options: async () => ({ databaseUrl: await postgresDatabase() }) },
];

describe.each(BACKENDS)('derived codes on $name', ({ options }) => {
  let service: TestService;
  let tab: TestTab;
  beforeAll(async () => {
    service = await startService({}, await options());
    tab = await TestTab.open(service.wsUrl);
    await registered(service, tab.tabId);
  });
  afterAll(async () => {
    tab?.close();
    await service?.close();
  });

  const qr = (purpose = 'Log in', extra: Record<string, unknown> = {}) =>
    post(service, '/QuickLogin', { mode: 'text', purpose, serviceId: '', tab: tab.tabId, ...extra }, { cookie: tab.cookie });

  it('a refresh of a request this node knows calls the store not at all; every answer is a new 22-character code', async () => {
    const counted = countStoreCalls(service.store);
    const first = await qr('Counted');
    expect(first.status).toBe(200);
    const firstCalls = [...counted.calls()];
    // The node met the request: one idempotent insert of the request row, and nothing else.
    expect(firstCalls).toEqual(['qrRequests.insertIfAbsent']);
    counted.reset();
    // The clock does not move: every refresh is in the same millisecond, and still a new code.
    const codes = new Set([codeOf(first)]);
    for (let i = 0; i < 50; i++) {
      const refresh = await qr('Counted');
      expect(refresh.status).toBe(200);
      codes.add(codeOf(refresh));
    }
    expect(counted.calls()).toEqual([]);
    expect(codes.size).toBe(51);
    for (const code of codes) expect(code).toMatch(CODE_PATTERN);
    // A code is a row only once it is fetched.
    const one = [...codes][7]!;
    expect(await service.store.codes.get(one)).toBeUndefined();
    counted.reset();
    const firstFetch = await fetchJson(service, one);
    expect(firstFetch.status).toBe(200);
    // Its first fetch on the node that knows the request: the row's idempotent insert alone, no read before it.
    expect(counted.calls()).toEqual(['codes.insertIfAbsent']);
    expect(await service.store.codes.get(one)).toMatchObject({ code: one, purpose: 'Counted', tabId: tab.tabId, state: 'pending' });
    // A second fetch: the insert finds the row, which is read and answered as it is (its nonce, so the same challenge).
    counted.reset();
    const second = await fetchJson(service, one);
    expect(counted.calls()).toEqual(['codes.insertIfAbsent', 'codes.get']);
    expect((second.body as { challenge: string }).challenge).toBe((firstFetch.body as { challenge: string }).challenge);
  });

  it('a forged or altered code is refused as unknown (404), also its PNG; nothing is written', async () => {
    const code = codeOf(await qr('Altered'));
    // Every position: time (0-5), salt and request id (6-13), MAC (14-21).
    for (let at = 0; at < 22; at++) {
      const other = altered(code, at);
      expectProblem(await fetchJson(service, other), 404, 'code_not_found');
      expect((await get(service, `/QuickLogin/Qr/${other}.png`)).status).toBe(404);
      expect(await service.store.codes.get(other)).toBeUndefined();
    }
    expectProblem(await fetchJson(service, 'A'.repeat(22)), 404, 'code_not_found');
    // The genuine one still works.
    expect((await fetchJson(service, code)).status).toBe(200);
  });

  it('expires 5 minutes after its issue time (410), without a row; its PNG is 404 then', async () => {
    const code = codeOf(await qr('Expiry'));
    service.clock.advance(VALIDITY_MS - 1);
    expect((await get(service, `/QuickLogin/Qr/${code}.png`)).status).toBe(200);
    const late = codeOf(await qr('Expiry')); // the same request, a new code that lives 5 minutes from now
    service.clock.advance(1);
    expectProblem(await fetchJson(service, code), 410, 'code_expired');
    expect(await service.store.codes.get(code)).toBeUndefined();
    expect((await get(service, `/QuickLogin/Qr/${code}.png`)).status).toBe(404);
    expect((await fetchJson(service, late)).status).toBe(200);
  });

  it('single use: of two signatures the first wins, the second is 409; the tab hears the result', async () => {
    const ada = await makeIdentity(service, { FIRST: 'Ada' });
    const code = codeOf(await qr('Single use'));
    const { challenge } = (await fetchJson(service, code)).body as { challenge: string };
    const path = `/QuickLogin/Sign/${code}`;
    const answers = await Promise.all([post(service, path, signatureBody(challenge, ada)), post(service, path, signatureBody(challenge, ada))]);
    expect(answers.map((a) => a.status).sort()).toEqual([200, 409]);
    expectProblem(answers.find((a) => a.status === 409)!, 409, 'code_already_used');
    const event = await tab.next('SignatureReceived');
    expect((event.data as { Purpose: string }).Purpose).toBe('Single use');
  });

  it('a signature of a fetched code reads its code and identity at once, then settles; a signature without a fetch resolves the code first', async () => {
    const ada = await makeIdentity(service, { FIRST: 'Ada' });
    const fetched = codeOf(await qr('One read'));
    const { challenge } = (await fetchJson(service, fetched)).body as { challenge: string };
    const counted = countStoreCalls(service.store);
    expect((await post(service, `/QuickLogin/Sign/${fetched}`, signatureBody(challenge, ada))).status).toBe(200);
    // The published mark comes later, with others, whenever its half second ends.
    const ofSignature = () => counted.calls().filter((call) => call !== 'codes.markPublished');
    expect(ofSignature()).toEqual(['identities.get', 'codes.get', 'codes.settle']);
    await tab.next('SignatureReceived');
    // Never fetched: the code is not a row, so it is resolved the long way (its row stored, with a nonce the
    // signer never saw) and the signature, made over a guessed challenge, is refused.
    const unfetched = codeOf(await qr('Unfetched'));
    counted.reset();
    const signed = await post(service, `/QuickLogin/Sign/${unfetched}`, signatureBody('a guessed challenge', ada));
    expectProblem(signed, 403, 'signature_invalid');
    expect(ofSignature()).toEqual(['identities.get', 'codes.get', 'codes.insertIfAbsent']);
  });
});

describe('derived codes with scan freshness (codeScanSeconds 2)', () => {
  let service: TestService;
  let tab: TestTab;
  beforeAll(async () => {
    service = await startService({ codeScanSeconds: 2 });
    tab = await TestTab.open(service.wsUrl);
    await registered(service, tab.tabId);
  });
  afterAll(async () => {
    tab?.close();
    await service?.close();
  });

  it('the first fetch within 2 s of the issue time binds; another app is 409; an unfetched code is 410 after 2 s', async () => {
    const qr = () => post(service, '/QuickLogin', { mode: 'text', purpose: 'Scan', serviceId: '', tab: tab.tabId }, { cookie: tab.cookie });
    const [a, b] = [codeOf(await qr()), codeOf(await qr())];
    service.clock.advance(2000);
    const first = await fetchJson(service, a);
    expect(first.status).toBe(200);
    expect(first.body.binding).toMatch(CODE_PATTERN);
    expectProblem(await fetchJson(service, a), 409, 'code_bound');
    expect((await fetchJson(service, a, first.body.binding as string)).status).toBe(200);
    service.clock.advance(1);
    expectProblem(await fetchJson(service, b), 410, 'code_too_old');
  });
});

describe('derived codes across a key rotation and a restart (one SQLite file)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tabwire-derived-'));
  const sqliteFile = join(dir, 'tabwire.sqlite');
  let service: TestService | undefined;
  afterEach(async () => {
    await service?.close();
    service = undefined;
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('a code issued before a restart, and before a rotation, is valid on the new process until it expires', async () => {
    service = await startService({}, { sqliteFile });
    const ada = await makeIdentity(service, { FIRST: 'Ada' });
    const ask = async (s: TestService, purpose: string) => codeOf(await post(s, '/QuickLogin', { mode: 'text', purpose, serviceId: '', tab: '' }));
    const before = await ask(service, 'Before');
    const unused = await ask(service, 'Before');
    const [oldKey] = await service.store.serverKeys.list(CODE_KEY_PURPOSE);
    const newKid = await rotateCodeKey(service.store.serverKeys, service.clock);
    await service.close();

    // A new process: nothing in memory; the request row and both keys are in the store.
    service = await startService({}, { sqliteFile });
    const after = await ask(service, 'After');
    const rows = await Promise.all([before, after].map((c) => service!.store.qrRequests.get(requestIdOf(c))));
    expect(rows.map((r) => r?.kid)).toEqual([oldKey!.kid, newKid]);
    const info = await fetchJson(service, before);
    expect(info.status).toBe(200);
    expect(info.body.purpose).toBe('Before');
    const signed = await post(service, `/QuickLogin/Sign/${before}`, signatureBody(info.body.challenge as string, ada));
    expect(signed.status).toBe(200);
    expect((await fetchJson(service, after)).status).toBe(200);
    // Until it expires: another code of the old key, 5 minutes after its issue.
    expect((await fetchJson(service, unused)).status).toBe(200);
    service.clock.advance(VALIDITY_MS);
    expectProblem(await fetchJson(service, unused), 410, 'code_expired');
  });
});

describe('random stored codes (qrDerivedCodes off)', () => {
  let service: TestService;
  beforeAll(async () => {
    service = await startService({ qrDerivedCodes: false });
  });
  afterAll(async () => {
    await service?.close();
  });

  it("a random code's first fetch reads its row and nothing else (no insert tried, no request looked for)", async () => {
    const code = codeOf(await post(service, '/QuickLogin', { mode: 'text', purpose: 'Random', serviceId: '', tab: '' }));
    expect(await service.store.codes.get(code)).toMatchObject({ code, purpose: 'Random', state: 'pending' });
    const counted = countStoreCalls(service.store);
    expect((await fetchJson(service, code)).status).toBe(200);
    expect(counted.calls()).toEqual(['codes.get']);
  });
});

/** The request id a derived code carries (derived-code.ts: 12 bits salt, 36 bits id after the 6-character time). */
function requestIdOf(code: string): number {
  return Buffer.from(code.slice(6), 'base64url').readUIntBE(0, 6) % 2 ** 36;
}
