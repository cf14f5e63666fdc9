import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchSignInfo, postDecision, SignerError } from '../../src/cli/signer.js';
import { writeKeyFile } from '../../src/identity/key-file.js';
import { privateKeyFromPem, signEd25519 } from '../../src/identity/keys.js';
import { signedMessage } from '../../src/quicklogin/challenge.js';
import { runCli } from '../helpers/cli.js';
import { get, post, registered, type Answer } from '../helpers/http.js';
import { makeIdentity, startService, type TestService } from '../helpers/service.js';
import { TestTab } from '../helpers/tab.js';

// Codes that cannot be relayed (docs/relay.md): with codeScanSeconds = 2 on a moved clock, a code must be
// fetched by a signing app within 2 s of issue, the first fetch binds it, and only the bound app may fetch
// it again or sign it. Codes without a limit behave as before.

let scanned: TestService;
let plain: TestService;
let ada: Awaited<ReturnType<typeof makeIdentity>>;
let plainAda: Awaited<ReturnType<typeof makeIdentity>>;
let tab: TestTab;

beforeAll(async () => {
  [scanned, plain] = await Promise.all([startService({ codeScanSeconds: 2 }), startService()]);
  ada = await makeIdentity(scanned, { FIRST: 'Ada' });
  plainAda = await makeIdentity(plain, { FIRST: 'Ada' });
  tab = await TestTab.open(scanned.wsUrl);
  await registered(scanned, tab.tabId);
});
afterAll(async () => {
  tab?.close();
  await Promise.all([scanned?.close(), plain?.close()]);
});

/** A new code for the tab on `service`; its signUrl path. */
async function issue(service: TestService, extra: Record<string, unknown> = {}, t?: TestTab): Promise<string> {
  const body = { mode: 'text', purpose: 'Log in', serviceId: '', tab: t?.tabId ?? '', ...extra };
  const qr = await post(service, '/QuickLogin', body, t ? { cookie: t.cookie } : {});
  expect(qr.status).toBe(200);
  return new URL(qr.body.signUrl as string).pathname;
}

const fetchJson = (service: TestService, path: string, binding?: string) =>
  get(service, path, { accept: 'application/json', ...(binding === undefined ? {} : { 'tabwire-binding': binding }) });

function signatureBody(challenge: string, who: Awaited<ReturnType<typeof makeIdentity>>, decision: 'approve' | 'reject' = 'approve') {
  return { legalId: who.identity.id, signature: signEd25519(privateKeyFromPem(who.privateKeyPem), signedMessage(challenge, who.identity.id, decision)), decision };
}

function expectProblem(answer: Answer, status: number, code: string): void {
  expect(answer.status).toBe(status);
  expect(answer.contentType).toMatch(/^application\/problem\+json/);
  expect(answer.body.code).toBe(code);
}

describe('codeScanSeconds = 2', () => {
  it('a fetch at 1 s binds the code: another fetch without the token is 409, with it 200; the signature needs the token (403 without)', async () => {
    const path = await issue(scanned, {}, tab);
    scanned.clock.advance(1000);
    const first = await fetchJson(scanned, path);
    expect(first.status).toBe(200);
    const { binding, challenge } = first.body as { binding: string; challenge: string };
    expect(binding).toMatch(/^[A-Za-z0-9_-]{22}$/);

    // Stored hashed: the database does not hold the token itself.
    const record = await scanned.store.codes.get(path.split('/').at(-1)!);
    expect(record).toMatchObject({ scanSeconds: 2, fetchedAt: scanned.clock.now() });
    expect(record!.bindingHash).toMatch(/^[0-9a-f]{64}$/);
    expect(record!.bindingHash).not.toContain(binding);

    // A second app, even within the 2 s, and later: the code is taken.
    expectProblem(await fetchJson(scanned, path), 409, 'code_bound');
    expectProblem(await fetchJson(scanned, path, 'A'.repeat(22)), 409, 'code_bound');
    // The app that fetched it reloads after the 2 s: it still works, and gets its token back.
    scanned.clock.advance(5000);
    const reload = await fetchJson(scanned, path, binding);
    expect(reload.status).toBe(200);
    expect(reload.body).toEqual(first.body);

    expectProblem(await post(scanned, path, signatureBody(challenge, ada)), 403, 'binding_required');
    expectProblem(await post(scanned, path, signatureBody(challenge, ada), { 'tabwire-binding': 'B'.repeat(22) }), 403, 'binding_required');
    // A refused signature does not use the code up.
    const signed = await post(scanned, path, signatureBody(challenge, ada), { 'tabwire-binding': binding });
    expect(signed.status).toBe(200);
    expect(signed.body).toEqual({ state: 'approved' });
    expect((await tab.next('SignatureReceived')).data).toMatchObject({ Id: ada.identity.id });
  });

  it('a code first fetched at 3 s is 410 code_too_old, and stays so (it is not bound by the refused fetch)', async () => {
    const path = await issue(scanned, {}, tab);
    scanned.clock.advance(3000);
    const late = await fetchJson(scanned, path);
    expectProblem(late, 410, 'code_too_old');
    expect(late.body.detail).toContain('2 s');
    expectProblem(await fetchJson(scanned, path), 410, 'code_too_old');
    expect((await scanned.store.codes.get(path.split('/').at(-1)!))!.bindingHash).toBeNull();
  });

  it('exactly at the limit (2 s) the fetch still binds', async () => {
    const path = await issue(scanned);
    scanned.clock.advance(2000);
    expect((await fetchJson(scanned, path)).status).toBe(200);
  });

  it('HEAD never binds: after HEADs (JSON and no Accept) the signing app fetches, binds and signs', async () => {
    const own = await TestTab.open(scanned.wsUrl);
    await registered(scanned, own.tabId);
    const path = await issue(scanned, {}, own);
    const code = path.split('/').at(-1)!;
    for (const headers of [{ accept: 'application/json' }, {}] as Record<string, string>[]) {
      const head = await fetch(scanned.baseUrl + path, { method: 'HEAD', headers });
      expect(head.status).toBe(200);
      expect(await head.text()).toBe('');
    }
    expect(await scanned.store.codes.get(code)).toMatchObject({ bindingHash: null, fetchedAt: null });
    // HEAD answers the status a GET would for a code that cannot be used: here an unknown one.
    expect((await fetch(`${scanned.baseUrl}/QuickLogin/Sign/${'A'.repeat(code.length)}`, { method: 'HEAD' })).status).toBe(404);

    const fetched = await fetchJson(scanned, path);
    expect(fetched.status).toBe(200);
    const { binding, challenge } = fetched.body as { binding: string; challenge: string };
    const signed = await post(scanned, path, signatureBody(challenge, ada), { 'tabwire-binding': binding });
    expect(signed.status).toBe(200);
    expect(signed.body).toEqual({ state: 'approved' });
    expect((await own.next('SignatureReceived')).data).toMatchObject({ Id: ada.identity.id });
    own.close();
  });

  it('a signature for a code no app fetched is 403 binding_required', async () => {
    const path = await issue(scanned);
    const code = path.split('/').at(-1)!;
    // A signer that skipped the fetch: refused before its signature is even looked at. The code is derived, so
    // it is no row until it is first resolved (docs/signing.md "Derived codes"); the refused signature leaves it unbound.
    expect(await scanned.store.codes.get(code)).toBeUndefined();
    const answer = await post(scanned, path, { legalId: ada.identity.id, signature: 'AAAA', decision: 'approve' });
    expectProblem(answer, 403, 'binding_required');
    expect((await scanned.store.codes.get(code))!.bindingHash).toBeNull();
  });

  it('two apps fetching at once: exactly one gets a token, the other 409, every time', async () => {
    for (let i = 0; i < 10; i++) {
      const path = await issue(scanned);
      const answers = await Promise.all([fetchJson(scanned, path), fetchJson(scanned, path)]);
      expect(answers.map((a) => a.status).sort()).toEqual([200, 409]);
      const winner = answers.find((a) => a.status === 200)!;
      expect(typeof winner.body.binding).toBe('string');
      expect(answers.find((a) => a.status === 409)!.body.code).toBe('code_bound');
    }
  });

  it('a request may tighten the limit (scanSeconds 1: 410 at 1.5 s) but not loosen it (scanSeconds 60: 410 at 3 s)', async () => {
    const tight = await issue(scanned, { scanSeconds: 1 });
    const loose = await issue(scanned, { scanSeconds: 60 });
    scanned.clock.advance(1500);
    expectProblem(await fetchJson(scanned, tight), 410, 'code_too_old');
    expect((await fetchJson(scanned, loose)).status).toBe(200);
    const looseLate = await issue(scanned, { scanSeconds: 60 });
    scanned.clock.advance(3000);
    expectProblem(await fetchJson(scanned, looseLate), 410, 'code_too_old');
  });

  it('scanSeconds is validated: 0, 1.5 and 3601 are 400 validation_failed', async () => {
    for (const scanSeconds of [0, 1.5, 3601, '5']) {
      const answer = await post(scanned, '/QuickLogin', { mode: 'text', purpose: 'p', serviceId: '', tab: '', scanSeconds });
      expectProblem(answer, 400, 'validation_failed');
    }
  });

  it('the approval page flow: the page fetches (binds) and posts /Dev with the token; without it 403', async () => {
    const path = await issue(scanned, {}, tab);
    const page = await fetchJson(scanned, path);
    expect(page.status).toBe(200);
    // The HTML page itself does not bind: only the JSON fetch does.
    expect((await get(scanned, path, { accept: 'text/html' })).status).toBe(200);
    expectProblem(await post(scanned, `${path}/Dev`, { decision: 'approve' }), 403, 'binding_required');
    const approved = await post(scanned, `${path}/Dev`, { decision: 'approve' }, { 'tabwire-binding': page.body.binding as string });
    expect(approved.body).toEqual({ state: 'approved' });
    await tab.next('SignatureReceived');
  });
});

describe('the reference signer (CLI) on scan-limited codes', () => {
  let keyFile: string;
  beforeAll(() => {
    keyFile = join(scanned.dir, 'ada.key');
    writeKeyFile(keyFile, ada.identity.id, ada.privateKeyPem);
  });

  it('signs a fresh code, sending the token it got', async () => {
    const signUrl = scanned.baseUrl + (await issue(scanned));
    const info = await fetchSignInfo(signUrl);
    expect(info.binding).toBeDefined();
    expect(await postDecision(signUrl, info, ada.identity.id, privateKeyFromPem(ada.privateKeyPem), 'reject')).toEqual({ state: 'rejected' });
    const cli = await runCli(['sign', scanned.baseUrl + (await issue(scanned)), '--key', keyFile, '--yes']);
    expect(cli.stderr).toBe('');
    expect(cli.status).toBe(0);
    expect(cli.stdout).toContain('approved');
  });

  it('says the QR code is too old (410), and that another app holds it (409), with a failed exit status', async () => {
    const old = scanned.baseUrl + (await issue(scanned));
    const taken = scanned.baseUrl + (await issue(scanned));
    await fetchSignInfo(taken);
    scanned.clock.advance(3000);
    const tooOld = await runCli(['sign', old, '--key', keyFile, '--yes']);
    expect(tooOld.status).toBe(1);
    expect(tooOld.stderr).toMatch(/^refused \(410 code_too_old\): This QR code is too old: .*Take the code the page shows now/);
    const bound = await runCli(['sign', taken, '--key', keyFile, '--yes']);
    expect(bound.status).toBe(1);
    expect(bound.stderr).toMatch(/^refused \(409 code_bound\): Another signing app has already fetched this code.*someone may be trying to log in as you/);
    // In process: the same refusals as SignerError with status and code.
    await expect(fetchSignInfo(old)).rejects.toMatchObject({ name: 'SignerError', status: 410, code: 'code_too_old' });
    await expect(fetchSignInfo(taken)).rejects.toBeInstanceOf(SignerError);
  });
});

describe('without codeScanSeconds', () => {
  it('codes behave as before: no binding, fetched by anyone, signed without a token, also after the 2 s', async () => {
    const path = await issue(plain);
    plain.clock.advance(10_000);
    const first = await fetchJson(plain, path);
    expect(first.status).toBe(200);
    expect(first.body).not.toHaveProperty('binding');
    expect((await fetchJson(plain, path)).status).toBe(200);
    const signed = await post(plain, path, signatureBody(first.body.challenge as string, plainAda));
    expect(signed.body).toEqual({ state: 'approved' });
  });

  it('a page refreshing every 2 s keeps working with N = 3: the code on screen, scanned at any moment, fetched up to 1 s later, binds', async () => {
    // The person scans somewhere in the 2 s a code is on screen (the next refresh replaces it), and the app
    // needs up to 1 s more to fetch it: the oldest fetch is 2.999 s after issue.
    for (const scanAt of [0, 500, 1000, 1500, 1999]) {
      const shown = await issue(plain, { scanSeconds: 3 });
      plain.clock.advance(scanAt + 1000);
      expect((await fetchJson(plain, shown)).status, `scanned ${scanAt} ms after it was shown`).toBe(200);
    }
  });

  it('a QR request may still ask for scan freshness (scanSeconds 2): it is then bound and refused as with the config', async () => {
    const path = await issue(plain, { scanSeconds: 2 });
    const first = await fetchJson(plain, path);
    expect(first.body.binding).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expectProblem(await fetchJson(plain, path), 409, 'code_bound');
    const late = await issue(plain, { scanSeconds: 2 });
    plain.clock.advance(2001);
    expectProblem(await fetchJson(plain, late), 410, 'code_too_old');
  });
});
