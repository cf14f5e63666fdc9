import { randomUUID } from 'node:crypto';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchSignInfo, postDecision, SignerError } from '../../src/cli/signer.js';
import { generateEd25519, privateKeyFromPem, signEd25519 } from '../../src/identity/keys.js';
import { signedMessage } from '../../src/quicklogin/challenge.js';
import { post, registered, type Answer } from '../helpers/http.js';
import { makeIdentity, startService, type TestService } from '../helpers/service.js';
import { TestTab } from '../helpers/tab.js';

let service: TestService;
let approved: Awaited<ReturnType<typeof makeIdentity>>;

beforeAll(async () => {
  service = await startService({ bodyLimitBytes: 2048 });
  approved = await makeIdentity(service, { FIRST: 'Grace' });
});
afterAll(async () => service.close());

function expectProblem(answer: Answer, status: number, code: string): void {
  expect(answer.status).toBe(status);
  expect(answer.contentType).toContain('application/problem+json');
  expect(answer.body).toMatchObject({ status, code, type: `urn:tabwire:problem:${code}` });
  expect(typeof answer.body.title).toBe('string');
  expect(typeof answer.body.detail).toBe('string');
}

/** Opens a WebSocket expecting the handshake to be refused; returns the HTTP answer. */
function refusedHandshake(protocols: string[] | undefined, headers: Record<string, string> = {}): Promise<{ status: number; body: any; type: string }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(service.wsUrl, protocols, { headers });
    ws.on('open', () => reject(new Error('handshake was accepted')));
    ws.on('unexpected-response', (_req, res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text), type: String(res.headers['content-type']) }));
    });
    ws.on('error', () => undefined);
  });
}

async function openTab(): Promise<TestTab> {
  const tab = await TestTab.open(service.wsUrl);
  await registered(service, tab.tabId);
  return tab;
}

const qr = (tab: TestTab, extra: Record<string, unknown> = {}) =>
  post(service, '/QuickLogin', { mode: 'text', purpose: 'Log in', serviceId: '', tab: tab.tabId, ...extra }, { cookie: tab.cookie });

describe('the event channel refuses', () => {
  it('a handshake without the ls subprotocol, or with another one', async () => {
    for (const protocols of [undefined, ['chat'], ['lsx', 'json']]) {
      const refused = await refusedHandshake(protocols);
      expect(refused.status).toBe(400);
      expect(refused.type).toContain('application/problem+json');
      expect(refused.body.code).toBe('subprotocol_required');
    }
  });

  it('a handshake from a foreign Origin', async () => {
    const refused = await refusedHandshake(['ls'], { origin: 'https://evil.example' });
    expect(refused.status).toBe(403);
    expect(refused.body.code).toBe('origin_not_allowed');
  });

  it('a plain GET of the WebSocket endpoint', async () => {
    const answer = await fetch(`${service.baseUrl}/ClientEventsWS`);
    expect(answer.status).toBe(426);
    expect((await answer.json()).code).toBe('websocket_required');
  });

  it('Register of a tab bound to another session (close 4403), while the owner keeps it', async () => {
    const owner = await openTab();
    const intruder = await TestTab.open(service.wsUrl, { tabId: owner.tabId });
    expect(intruder.cookie).not.toBe(owner.cookie);
    expect(await intruder.closed()).toEqual({ code: 4403, reason: 'tab_session_mismatch' });
    expect(owner.closeCode).toBeUndefined();
    owner.close();
  });

  it('a malformed frame (close 4400)', async () => {
    const tab = await TestTab.open(service.wsUrl, { register: false });
    tab.send('{"cmd":"Register","tabId":"x"');
    expect(await tab.closed()).toEqual({ code: 4400, reason: 'frame_invalid' });
  });
});

describe('POST /QuickLogin refuses', () => {
  it('a QR request for another session\'s tab (403), also one it bound by asking first; without a session (403)', async () => {
    const tab = await openTab();
    const other = await openTab();
    // A QR request that comes before its tab's Register binds the tab to the asking session...
    const early = randomUUID();
    expect((await qr(other, { tab: early })).status).toBe(200);
    // ...so another session can neither ask for it nor register it.
    expectProblem(await qr(tab, { tab: early }), 403, 'tab_session_mismatch');
    expectProblem(await qr(tab, { tab: other.tabId }), 403, 'tab_session_mismatch');
    expectProblem(await post(service, '/QuickLogin', { mode: 'text', purpose: 'x', serviceId: '', tab: tab.tabId }), 403, 'session_missing');
    tab.close();
    other.close();
  });

  it('an unknown mode, naming the field and the allowed values', async () => {
    const tab = await openTab();
    const answer = await qr(tab, { mode: 'svg' });
    expectProblem(answer, 400, 'validation_failed');
    expect(answer.body.errors).toEqual([{ pointer: '/mode', detail: 'must be one of: image, base64, text' }]);
    tab.close();
  });

  it('a missing purpose, and a non-positive or non-numeric agentApiTimeout', async () => {
    const tab = await openTab();
    const missing = await post(service, '/QuickLogin', { mode: 'text', serviceId: '', tab: tab.tabId }, { cookie: tab.cookie });
    expectProblem(missing, 400, 'validation_failed');
    expect(missing.body.errors.map((e: { pointer: string }) => e.pointer)).toContain('/purpose');
    expectProblem(await qr(tab, { agentApiTimeout: 0 }), 400, 'validation_failed');
    expectProblem(await qr(tab, { agentApiTimeout: '60' }), 400, 'validation_failed');
    tab.close();
  });

  it('malformed JSON, a non-object body, a wrong content type, and a body over the limit', async () => {
    expectProblem(await post(service, '/QuickLogin', '{"mode": "text",'), 400, 'malformed_json');
    expectProblem(await post(service, '/QuickLogin', '[1,2]'), 400, 'validation_failed');
    expectProblem(await post(service, '/QuickLogin', 'mode=text', { 'content-type': 'application/x-www-form-urlencoded' }), 415, 'unsupported_media_type');
    const big = { mode: 'text', purpose: 'x'.repeat(4096), serviceId: '', tab: '' };
    expectProblem(await post(service, '/QuickLogin', big), 413, 'body_too_large');
  });

  it('a body that mixes or lacks the fields of both request kinds, and backend registration for now', async () => {
    const mixed = await post(service, '/QuickLogin', { mode: 'text', purpose: 'x', serviceId: '', tab: '', service: 'https://a.example/cb', sessionId: 's' });
    expectProblem(mixed, 400, 'request_kind_ambiguous');
    expect(mixed.body.detail).toContain('service');
    expectProblem(await post(service, '/QuickLogin', { foo: 1 }), 400, 'request_kind_ambiguous');
    expectProblem(await post(service, '/QuickLogin', { service: 'https://unknown.test/cb', sessionId: 's' }), 400, 'callback_url_refused');
    expectProblem(await post(service, '/QuickLogin', { mode: 'text', purpose: 'x', serviceId: 'abc', tab: '' }), 404, 'service_not_registered');
  });

  it('a foreign Origin', async () => {
    expectProblem(await post(service, '/QuickLogin', { mode: 'text', purpose: 'x', serviceId: '', tab: '' }, { origin: 'https://evil.example' }), 403, 'origin_not_allowed');
  });
});

describe('signing refuses', () => {
  async function newCode(): Promise<string> {
    const answer = await post(service, '/QuickLogin', { mode: 'image', purpose: 'Sign me', serviceId: '', tab: '' });
    expect(answer.status).toBe(200);
    return answer.body.signUrl as string;
  }

  async function refusal(promise: Promise<unknown>): Promise<SignerError> {
    const error = await promise.then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(SignerError);
    return error as SignerError;
  }

  it('a signature by an identity that is not approved, or obsoleted', async () => {
    const pending = await makeIdentity(service, { FIRST: 'Pending' }, false);
    const signUrl = await newCode();
    const info = await fetchSignInfo(signUrl);
    const error = await refusal(postDecision(signUrl, info, pending.identity.id, privateKeyFromPem(pending.privateKeyPem), 'approve'));
    expect([error.status, error.code]).toEqual([403, 'identity_not_approved']);

    const retired = await makeIdentity(service, { FIRST: 'Retired' });
    await service.store.identities.transition(retired.identity.id, 'Approved', 'Obsoleted', service.clock.now());
    const error2 = await refusal(postDecision(signUrl, info, retired.identity.id, privateKeyFromPem(retired.privateKeyPem), 'approve'));
    expect([error2.status, error2.code]).toEqual([403, 'identity_not_approved']);
  });

  it('a bad signature: another key, another decision, another challenge, garbage', async () => {
    const signUrl = await newCode();
    const info = await fetchSignInfo(signUrl);
    const otherKey = privateKeyFromPem(generateEd25519().privateKeyPem);
    const error = await refusal(postDecision(signUrl, info, approved.identity.id, otherKey, 'approve'));
    expect([error.status, error.code]).toEqual([403, 'signature_invalid']);

    const key = privateKeyFromPem(approved.privateKeyPem);
    const signedReject = signEd25519(key, signedMessage(info.challenge, approved.identity.id, 'reject'));
    const flipped = await post(service, new URL(signUrl).pathname, { legalId: approved.identity.id, signature: signedReject, decision: 'approve' });
    expectProblem(flipped, 403, 'signature_invalid');
    const garbage = await post(service, new URL(signUrl).pathname, { legalId: approved.identity.id, signature: 'AAAA', decision: 'approve' });
    expectProblem(garbage, 403, 'signature_invalid');
    const unknownId = await post(service, new URL(signUrl).pathname, { legalId: 'nobody@legal.test', signature: 'AAAA', decision: 'approve' });
    expectProblem(unknownId, 404, 'identity_not_found');
    const noDecision = await post(service, new URL(signUrl).pathname, { legalId: approved.identity.id, signature: 'AAAA' });
    expectProblem(noDecision, 400, 'validation_failed');
    // None of that used the code up: the right signature still works.
    expect((await postDecision(signUrl, info, approved.identity.id, key, 'approve')).state).toBe('approved');
  });

  it('a second signature on a used code (409), also for concurrent signatures', async () => {
    const key = privateKeyFromPem(approved.privateKeyPem);
    const signUrl = await newCode();
    const info = await fetchSignInfo(signUrl);
    const outcomes = await Promise.allSettled(Array.from({ length: 5 }, () => postDecision(signUrl, info, approved.identity.id, key, 'approve')));
    expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(1);
    for (const o of outcomes.filter((o) => o.status === 'rejected')) {
      expect(((o as PromiseRejectedResult).reason as SignerError).status).toBe(409);
    }
    const again = await refusal(postDecision(signUrl, info, approved.identity.id, key, 'approve'));
    expect([again.status, again.code]).toEqual([409, 'code_already_used']);
    const describe = await refusal(fetchSignInfo(signUrl));
    expect(describe.status).toBe(409);
  });

  it('a code past its validity (410), unknown codes (404)', async () => {
    const key = privateKeyFromPem(approved.privateKeyPem);
    const signUrl = await newCode();
    const info = await fetchSignInfo(signUrl);
    service.clock.advance(299_000);
    const stillValid = await newCode(); // issued later, expires later
    service.clock.advance(1_000);
    const error = await refusal(postDecision(signUrl, info, approved.identity.id, key, 'approve'));
    expect([error.status, error.code]).toEqual([410, 'code_expired']);
    expect((await refusal(fetchSignInfo(signUrl))).status).toBe(410);
    const unknown = await refusal(fetchSignInfo(`${service.baseUrl}/QuickLogin/Sign/AAAAAAAAAAAAAAAAAAAAAA`));
    expect([unknown.status, unknown.code]).toEqual([404, 'code_not_found']);
    const info2 = await fetchSignInfo(stillValid);
    expect((await postDecision(stillValid, info2, approved.identity.id, key, 'approve')).state).toBe('approved');
  });
});

describe('after every refusal', () => {
  it('a normal flow still works', async () => {
    const tab = await openTab();
    const answer = await qr(tab, { propertyFilter: 'FIRST' });
    expect(answer.status).toBe(200);
    const info = await fetchSignInfo(answer.body.signUrl);
    await postDecision(answer.body.signUrl, info, approved.identity.id, privateKeyFromPem(approved.privateKeyPem), 'approve');
    expect((await tab.next('SignatureReceived')).data).toMatchObject({ Properties: { FIRST: 'Grace' } });
    const health = await fetch(`${service.baseUrl}/healthz`);
    expect(health.status).toBe(200);
    tab.close();
  });
});
