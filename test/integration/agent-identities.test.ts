import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../../src/agent/api-keys.js';
import { fetchSignInfo, postDecision, SignerError } from '../../src/cli/signer.js';
import { applicationMessage, type IdentityApplication } from '../../src/identity/application.js';
import { generateEd25519, privateKeyFromPem, signEd25519 } from '../../src/identity/keys.js';
import type { QuickLoginResult } from '../../src/protocol/events.js';
import { get, post, registered } from '../helpers/http.js';
import { makeIdentity, startService, type TestService } from '../helpers/service.js';
import { TestTab } from '../helpers/tab.js';

let service: TestService;
let jwt: string;

/** The canonical encodings of the eight small-order points (docs/signing.md "Keys that are refused"). */
const SMALL_ORDER = [
  '0100000000000000000000000000000000000000000000000000000000000000',
  'ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f',
  '0000000000000000000000000000000000000000000000000000000000000080',
  '0000000000000000000000000000000000000000000000000000000000000000',
  'c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a',
  'c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa',
  '26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05',
  '26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85',
];
/** y = p + 3, a non-canonical encoding of the curve point whose y is 3 (p = 2^255 - 19). */
const NON_CANONICAL_OF_VALID = ['f0ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f'];

/** S + L, little-endian (L the base point's order): the same signature scalar, not canonical. */
function addGroupOrder(s: Buffer): Buffer {
  const L = 2n ** 252n + 27742317777372353535851937790883648493n;
  let n = BigInt(`0x${Buffer.from(s).reverse().toString('hex')}`) + L;
  const out = Buffer.alloc(32);
  for (let i = 0; i < 32; i++, n >>= 8n) out[i] = Number(n & 255n);
  return out;
}

const PNG = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex');

beforeAll(async () => {
  service = await startService();
  const { key } = await createApiKey(service.store.apiKeys, service.clock, null);
  await post(service, '/Agent/Account/Create', { userName: 'ada', password: 'analytical engine' }, { 'x-api-key': key });
  jwt = (await post(service, '/Agent/Account/Login', { userName: 'ada', password: 'analytical engine', seconds: 3600 })).body.jwt;
});
afterAll(async () => service.close());

const auth = () => ({ authorization: `Bearer ${jwt}` });

/** Applies for an identity with a fresh key, signing the application with `signingPem` (default: the same key). */
async function apply(properties: Record<string, string>, o: { signingPem?: string; attachments?: IdentityApplication['attachments'] } = {}) {
  const pair = generateEd25519();
  const application: IdentityApplication = { properties, publicKey: pair.publicKey, ...(o.attachments ? { attachments: o.attachments } : {}) };
  const signature = signEd25519(privateKeyFromPem(o.signingPem ?? pair.privateKeyPem), applicationMessage('ada', application));
  const answer = await post(service, '/Agent/Legal/ApplyId', { ...application, signature }, auth());
  return { answer, key: privateKeyFromPem(pair.privateKeyPem) };
}

async function openTab() {
  const tab = await TestTab.open(service.wsUrl);
  await registered(service, tab.tabId);
  return tab;
}

async function signUrlFor(tab: TestTab, extra: Record<string, unknown> = {}) {
  const qr = await post(service, '/QuickLogin', { mode: 'text', purpose: 'Agent login', serviceId: '', tab: tab.tabId, ...extra }, { cookie: tab.cookie });
  expect(qr.status).toBe(200);
  return qr.body.signUrl as string;
}

describe('identities through the Agent API', () => {
  it('ApplyId creates an identity in state Created; the account can read it back, others cannot', async () => {
    const { answer } = await apply({ FIRST: 'Ada', LAST: 'Lovelace' });
    expect(answer.status).toBe(201);
    expect(answer.body.identity).toMatchObject({ State: 'Created', Properties: { FIRST: 'Ada', LAST: 'Lovelace' }, ClientKeyName: 'ed25519' });
    const id = answer.body.identity.Id as string;
    expect((await get(service, `/Agent/Legal/GetIdentity?id=${encodeURIComponent(id)}`, auth())).body.identity.Id).toBe(id);
    expect((await get(service, '/Agent/Legal/ListIdentities', auth())).body.identities.map((i: { Id: string }) => i.Id)).toContain(id);
    const cli = await service.store.identities.list();
    const foreign = cli.find((i) => i.accountId === null);
    if (foreign) expect((await get(service, `/Agent/Legal/GetIdentity?id=${encodeURIComponent(foreign.id)}`, auth())).status).toBe(404);
    expect((await get(service, '/Agent/Legal/ListIdentities')).body.code).toBe('token_missing');
  });

  it('refuses an application signed by a key other than the one submitted', async () => {
    const { answer } = await apply({ FIRST: 'Mallory' }, { signingPem: generateEd25519().privateKeyPem });
    expect([answer.status, answer.body.code]).toEqual([403, 'signature_invalid']);
  });

  it('refuses keys that prove nothing: each small-order point, a non-canonical encoding, and a real key with a non-canonical S', async () => {
    const neutral = Buffer.alloc(32);
    neutral[0] = 1;
    const forged = Buffer.concat([neutral, Buffer.alloc(32)]).toString('base64'); // R = neutral point, S = 0
    const refused: string[] = [];
    for (const encoding of SMALL_ORDER.concat(NON_CANONICAL_OF_VALID)) {
      const application: IdentityApplication = { properties: { FIRST: 'Eve' }, publicKey: Buffer.from(encoding, 'hex').toString('base64') };
      const answer = await post(service, '/Agent/Legal/ApplyId', { ...application, signature: forged }, auth());
      expect(answer.status).toBe(400);
      expect(answer.contentType).toMatch(/^application\/problem\+json/);
      refused.push(answer.body.code);
    }
    expect(refused).toEqual(Array(9).fill('public_key_refused'));

    // A real key whose proof of possession carries S + L (the same signature, made malleable): refused.
    const pair = generateEd25519();
    const application: IdentityApplication = { properties: { FIRST: 'Eve' }, publicKey: pair.publicKey };
    const good = Buffer.from(signEd25519(privateKeyFromPem(pair.privateKeyPem), applicationMessage('ada', application)), 'base64');
    const malleable = Buffer.concat([good.subarray(0, 32), addGroupOrder(good.subarray(32))]).toString('base64');
    const answer = await post(service, '/Agent/Legal/ApplyId', { ...application, signature: malleable }, auth());
    expect([answer.status, answer.body.code]).toEqual([403, 'signature_invalid']);
    // The same key with its real signature still works.
    expect((await post(service, '/Agent/Legal/ApplyId', { ...application, signature: good.toString('base64') }, auth())).status).toBe(201);
  });

  it('an identity stored with a small-order key cannot sign: marked, 403 identity_key_refused; unmarked, 403 signature_invalid', async () => {
    const neutral = Buffer.alloc(32);
    neutral[0] = 1;
    const forged = Buffer.concat([neutral, Buffer.alloc(32)]).toString('base64');
    for (const keyProblem of ['small_order', undefined] as const) {
      const { identity } = await makeIdentity(service, { FIRST: 'Eve' });
      const stored = { ...identity, state: 'Approved' as const, id: `${identity.id}-${keyProblem ?? 'unmarked'}`, clientPubKey: neutral.toString('base64'), ...(keyProblem ? { keyProblem } : {}) };
      await service.store.identities.insert(stored);
      const tab = await openTab();
      const signUrl = await signUrlFor(tab);
      const path = new URL(signUrl).pathname;
      const answer = await post(service, path, { legalId: stored.id, signature: forged, decision: 'approve' });
      expect(answer.contentType).toMatch(/^application\/problem\+json/);
      expect([answer.status, answer.body.code]).toEqual([403, keyProblem ? 'identity_key_refused' : 'signature_invalid']);
      // The code is still open: a real identity signs it, and the tab hears only that.
      const ada = await makeIdentity(service, { FIRST: 'Ada' });
      await postDecision(signUrl, await fetchSignInfo(signUrl), ada.identity.id, privateKeyFromPem(ada.privateKeyPem), 'approve');
      expect((await tab.next('SignatureReceived')).data).toMatchObject({ Id: ada.identity.id });
      tab.close();
    }
  });

  it('refuses attachments of a type outside the allowlist, and bad property names', async () => {
    const html = { fileName: 'x.html', contentType: 'text/html', content: Buffer.from('<script>').toString('base64') };
    const { answer } = await apply({ FIRST: 'Ada' }, { attachments: [html as never] });
    expect([answer.status, answer.body.code]).toEqual([400, 'validation_failed']);
    expect(answer.body.errors.some((e: { pointer: string }) => e.pointer.startsWith('/attachments/0/contentType'))).toBe(true);
    const bad = await apply({ 'not a name': 'x' });
    expect([bad.answer.status, bad.answer.body.code]).toEqual([400, 'validation_failed']);
  });

  it('an unapproved identity cannot sign; an approved one can; after obsolete it cannot', async () => {
    const { answer, key } = await apply({ FIRST: 'Ada' });
    const id = answer.body.identity.Id as string;
    const tab = await openTab();
    let signUrl = await signUrlFor(tab);
    const refused = await postDecision(signUrl, await fetchSignInfo(signUrl), id, key, 'approve').catch((e: SignerError) => e);
    expect((refused as SignerError).code).toBe('identity_not_approved');

    await service.store.identities.transition(id, 'Created', 'Approved', service.clock.now());
    expect((await postDecision(signUrl, await fetchSignInfo(signUrl), id, key, 'approve')).state).toBe('approved');
    expect(((await tab.next('SignatureReceived')).data as QuickLoginResult).Id).toBe(id);

    await service.store.identities.transition(id, 'Approved', 'Obsoleted', service.clock.now());
    signUrl = await signUrlFor(tab);
    const obsolete = await postDecision(signUrl, await fetchSignInfo(signUrl), id, key, 'approve').catch((e: SignerError) => e);
    expect((obsolete as SignerError).code).toBe('identity_not_approved');
    tab.close();
  });

  it('agentApiTimeout yields a token for the signer\'s account that works, and stops after its lifetime (moved clock)', async () => {
    const { answer, key } = await apply({ FIRST: 'Ada' });
    const id = answer.body.identity.Id as string;
    await service.store.identities.transition(id, 'Created', 'Approved', service.clock.now());
    const tab = await openTab();
    const signUrl = await signUrlFor(tab, { agentApiTimeout: 60 });
    await postDecision(signUrl, await fetchSignInfo(signUrl), id, key, 'approve');
    const result = (await tab.next('SignatureReceived')).data as QuickLoginResult;
    expect(result.AgentApiExpires).toBe(Math.floor(service.clock.now() / 1000) + 60);
    const token = { authorization: `Bearer ${result.AgentApiToken}` };
    expect((await get(service, '/Agent/Account/Info', token)).body.userName).toBe('ada');
    service.clock.advance(61_000);
    expect((await get(service, '/Agent/Account/Info', token)).body.code).toBe('token_expired');
    tab.close();
  });

  it('result attachments carry a Url only the requesting page can fetch, while the result is fresh', async () => {
    const attachment = { fileName: 'portrait.png', contentType: 'image/png' as const, content: PNG.toString('base64') };
    const { answer, key } = await apply({ FIRST: 'Ada' }, { attachments: [attachment] });
    const id = answer.body.identity.Id as string;
    await service.store.identities.transition(id, 'Created', 'Approved', service.clock.now());
    const tab = await openTab();
    const signUrl = await signUrlFor(tab);
    await postDecision(signUrl, await fetchSignInfo(signUrl), id, key, 'approve');
    const result = (await tab.next('SignatureReceived')).data as QuickLoginResult;
    expect(result.Attachments).toHaveLength(1);
    const url = new URL(result.Attachments[0]!.Url);
    expect(url.origin).toBe(service.baseUrl);
    const mine = await get(service, url.pathname, { cookie: tab.cookie });
    expect(mine.status).toBe(200);
    expect(mine.contentType).toBe('image/png');
    expect(Buffer.compare(mine.body, PNG)).toBe(0);
    expect((await get(service, url.pathname)).status).toBe(404); // no session
    const other = await openTab();
    expect((await get(service, url.pathname, { cookie: other.cookie })).status).toBe(404); // another session
    service.clock.advance(301_000);
    expect((await get(service, url.pathname, { cookie: tab.cookie })).status).toBe(404); // no longer fresh
    tab.close();
    other.close();
  });
});
