import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyCallback } from '../../src/callbacks/verify.js';
import { get, post, registered } from '../helpers/http.js';
import { CallbackReceiver } from '../helpers/receiver.js';
import { startService, testResolver, type TestService } from '../helpers/service.js';
import { barrier } from '../helpers/hub.js';
import { TestTab } from '../helpers/tab.js';
import { until } from '../helpers/until.js';
import { selfSignedCertificate } from '../helpers/tls.js';

const tls = selfSignedCertificate();
const secret = `whsec_${randomBytes(32).toString('base64')}`;
let service: TestService;
let receiver: CallbackReceiver;

beforeAll(async () => {
  receiver = await CallbackReceiver.start(tls);
  service = await startService(
    {
      callbackCaFile: tls.certFile,
      callbackAllowedHosts: ['127.0.0.1'],
      callbackRetryBaseMs: 50,
      callbackRetryCapMs: 200,
      callbackPollMs: 20,
    },
    { realClock: true },
  );
});
afterAll(async () => {
  await service.close();
  await receiver.close();
});

async function openTab(): Promise<TestTab> {
  const tab = await TestTab.open(service.wsUrl);
  await registered(service, tab.tabId);
  return tab;
}

/** Registers the receiver, asks for a QR code for the tab in backend mode, approves with the development identity. */
async function backendLogin(tab: TestTab, sessionId: string) {
  const registration = await post(service, '/QuickLogin', { service: receiver.url, sessionId, webhookSecret: secret });
  expect(registration.status).toBe(200);
  expect(Object.keys(registration.body)).toEqual(['serviceId']);
  const { serviceId } = registration.body as { serviceId: string };
  const qr = await post(service, '/QuickLogin', { mode: 'text', purpose: 'Backend login', serviceId, tab: tab.tabId, propertyFilter: 'FIRST' }, { cookie: tab.cookie });
  expect(qr.status).toBe(200);
  const approved = await post(service, `${new URL(qr.body.signUrl).pathname}/Dev`, { decision: 'approve' });
  expect(approved.body).toEqual({ state: 'approved' });
  return serviceId;
}

describe('backend mode', () => {
  it('POSTs the signed result to the backend; the tab gets only SignatureReceivedBE with ""', async () => {
    receiver.answers = [{ status: 200 }];
    const before = receiver.received.length;
    const tab = await openTab();
    const serviceId = await backendLogin(tab, 'session-1');
    const event = await tab.next('SignatureReceivedBE');
    expect(event.data).toBe('');
    await receiver.waitFor(before + 1);
    const callback = receiver.received[before]!;

    // Verified with the standardwebhooks package (symmetric v1, the backend's own secret) ...
    const payload = new Webhook(secret).verify(callback.body, callback.headers as Record<string, string>) as Record<string, unknown>;
    expect(payload).toMatchObject({ SessionId: 'session-1', ServiceId: serviceId, Purpose: 'Backend login', Properties: { FIRST: 'Ada' } });
    // ... and with tabwire/backend against the published key (asymmetric v1a).
    const { key } = (await get(service, '/.well-known/tabwire/webhook-key')).body as { key: string };
    expect(key).toMatch(/^whpk_/);
    expect(verifyCallback(callback.headers, callback.body, key)).toEqual(payload);
    expect(() => verifyCallback(callback.headers, callback.body.replace('Ada', 'Eve'), key)).toThrow();
    expect(() => new Webhook(secret).verify(callback.body.replace('Ada', 'Eve'), callback.headers as Record<string, string>)).toThrow();
    // Our v1 equals what the package itself computes for the same message.
    const ours = (callback.headers['webhook-signature'] as string).split(' ').find((s) => s.startsWith('v1,'));
    const theirs = new Webhook(secret).sign(callback.headers['webhook-id'] as string, new Date(Number(callback.headers['webhook-timestamp']) * 1000), callback.body);
    expect(ours).toBe(theirs);

    await barrier(service, tab); // every event sent to the tab before the marker has arrived
    expect(tab.events.map((e) => e.type)).toEqual(['SignatureReceivedBE', 'Barrier']);
    tab.close();
  });

  it('a rejection in backend mode reaches the tab as SignatureRejected at once, and no callback is sent', async () => {
    const before = receiver.received.length;
    const tab = await openTab();
    const registration = await post(service, '/QuickLogin', { service: receiver.url, sessionId: 'session-r', webhookSecret: secret });
    const { serviceId } = registration.body as { serviceId: string };
    const qr = await post(service, '/QuickLogin', { mode: 'text', purpose: 'Backend login', serviceId, tab: tab.tabId }, { cookie: tab.cookie });
    const rejected = await post(service, `${new URL(qr.body.signUrl).pathname}/Dev`, { decision: 'reject' });
    expect(rejected.body).toEqual({ state: 'rejected' });
    const event = await tab.next('SignatureRejected');
    expect(event.data).toMatchObject({ Purpose: 'Backend login' });
    await barrier(service, tab);
    expect(tab.events.map((e) => e.type)).toEqual(['SignatureRejected', 'Barrier']);
    expect(receiver.received.length).toBe(before);
    tab.close();
  });

  it('503 twice then 200: three attempts with one webhook-id, exactly one SignatureReceivedBE', async () => {
    const before = receiver.received.length;
    receiver.answers = [{ status: 503 }, { status: 503, headers: { 'retry-after': '0' } }, { status: 200 }];
    // Answers are counted from the first request of this test.
    const offset = before;
    receiver.answers = [...Array.from({ length: offset }, () => ({ status: 200 })), ...receiver.answers];
    const tab = await openTab();
    await backendLogin(tab, 'session-2');
    await tab.next('SignatureReceivedBE');
    await receiver.waitFor(before + 3);
    // Delivered is final: no attempt comes after it; and the marker follows every event the tab was sent.
    expect(await service.store.callbacks.get(receiver.received[before]!.headers['webhook-id'] as string)).toMatchObject({ state: 'delivered' });
    await barrier(service, tab);
    const attempts = receiver.received.slice(before);
    expect(attempts).toHaveLength(3);
    expect(new Set(attempts.map((a) => a.headers['webhook-id'])).size).toBe(1);
    expect(tab.events.filter((e) => e.type === 'SignatureReceivedBE')).toHaveLength(1);
    const metrics = (await get(service, '/metrics')).body.toString();
    expect(metrics).toMatch(/tabwire_callback_failures_total\{reason="status_503"\} [1-9]/);
    expect(metrics).toMatch(/tabwire_callback_delivered_total [1-9]/);
    tab.close();
  });

  it('stops retrying on 410 from the backend, and never follows a redirect', async () => {
    const before = receiver.received.length;
    const trap = await CallbackReceiver.start(tls);
    receiver.answers = [...Array.from({ length: before }, () => ({ status: 200 })), { status: 302, headers: { location: trap.url } }, { status: 410 }];
    const tab = await openTab();
    await backendLogin(tab, 'session-3');
    await receiver.waitFor(before + 2);
    // Gone is final: once the row says so, no attempt can follow; the marker follows every event the tab was sent.
    const id = receiver.received[before]!.headers['webhook-id'] as string;
    await until(async () => (await service.store.callbacks.get(id))?.state === 'gone', 'the callback to be given up');
    await barrier(service, tab);
    expect(receiver.received.length).toBe(before + 2);
    expect(trap.received).toHaveLength(0);
    const callback = await service.store.callbacks.get(receiver.received[before]!.headers['webhook-id'] as string);
    expect(callback).toMatchObject({ state: 'gone', attempts: 2 });
    expect(tab.events.filter((e) => e.type === 'SignatureReceivedBE')).toHaveLength(0);
    expect((await get(service, '/metrics')).body.toString()).toMatch(/tabwire_callback_failures_total\{reason="redirect_not_followed"\} [1-9]/);
    await trap.close();
    tab.close();
  });

  it('never sends a callback for a code that ends rejected: approve and reject race, only the winner\'s callback exists', async () => {
    receiver.answers = [{ status: 200 }];
    const before = receiver.received.length;
    const tab = await openTab();
    const registration = await post(service, '/QuickLogin', { service: receiver.url, sessionId: 'race', webhookSecret: secret });
    const { serviceId } = registration.body as { serviceId: string };
    const approved: string[] = [];
    const rejected: string[] = [];
    for (let i = 0; i < 12; i++) {
      const qr = await post(service, '/QuickLogin', { mode: 'text', purpose: 'Race', serviceId, tab: tab.tabId }, { cookie: tab.cookie });
      const path = `${new URL(qr.body.signUrl).pathname}/Dev`;
      const code = path.split('/')[3]!;
      // Reject first on even rounds, approve first on odd ones: either may win the settle.
      const order = i % 2 === 0 ? (['reject', 'approve'] as const) : (['approve', 'reject'] as const);
      const answers = await Promise.all(order.map((decision) => post(service, path, { decision })));
      const winner = answers.find((a) => a.status === 200)!.body.state as string;
      expect(answers.map((a) => a.status).sort()).toEqual([200, 409]);
      (winner === 'approved' ? approved : rejected).push(code);
    }
    await receiver.waitFor(before + approved.length);
    for (const code of rejected) expect(await service.store.callbacks.get(`msg_${code}`)).toBeUndefined();
    // Every approved code's callback is stored and sent once; a rejected code's never is.
    for (const code of approved) expect((await service.store.callbacks.get(`msg_${code}`))?.state).toBe('delivered');
    const sent = receiver.received.slice(before).map((r) => (r.headers['webhook-id'] as string).slice('msg_'.length));
    expect(sent.sort()).toEqual([...approved].sort());
    tab.close();
  });
});

describe('registration and renewal', () => {
  let clocked: TestService;
  beforeAll(async () => {
    clocked = await startService({ callbackAllowedHosts: ['127.0.0.1'] });
  });
  afterAll(async () => clocked.close());

  const register = (body: Record<string, unknown>) => post(clocked, '/QuickLogin', body);
  const qrFor = (serviceId: string) => post(clocked, '/QuickLogin', { mode: 'text', purpose: 'x', serviceId, tab: '' });

  it('renewal restarts the validity; an expired serviceId is refused with 410', async () => {
    const { serviceId } = (await register({ service: receiver.url, sessionId: 's1' })).body;
    clocked.clock.advance(240_000);
    expect((await register({ service: receiver.url, sessionId: 's1', serviceId })).body).toEqual({ serviceId });
    clocked.clock.advance(240_000); // 8 minutes after registering, 4 after renewing
    expect((await qrFor(serviceId)).status).toBe(200);
    clocked.clock.advance(61_000);
    const expired = await qrFor(serviceId);
    expect([expired.status, expired.body.code]).toEqual([410, 'service_expired']);
    const renewLate = await register({ service: receiver.url, sessionId: 's1', serviceId });
    expect([renewLate.status, renewLate.body.code]).toEqual([410, 'service_expired']);
  });

  it('refuses renewal of an unknown serviceId (404) or with another callback (409), and a QR request naming an unknown one', async () => {
    const unknown = await register({ service: receiver.url, sessionId: 's', serviceId: 'no-such-service' });
    expect([unknown.status, unknown.body.code]).toEqual([404, 'service_not_registered']);
    const { serviceId } = (await register({ service: receiver.url, sessionId: 's2' })).body;
    const other = await register({ service: `${receiver.url}/other`, sessionId: 's2', serviceId });
    expect([other.status, other.body.code]).toEqual([409, 'service_mismatch']);
    expect((await qrFor('no-such-service')).body.code).toBe('service_not_registered');
  });
});

describe('callback URL policy (SSRF)', () => {
  let strict: TestService;
  let answers: Record<string, string[]>;
  beforeAll(async () => {
    // No allowlist here; names resolve only through this table (nothing reaches a real DNS server).
    // The public address is never connected to: the one test that delivers turns the name to loopback first.
    answers = { 'public.test': ['93.184.215.14'], 'loopback.test': ['127.0.0.1'], 'mixed.test': ['93.184.215.14', '10.1.2.3'] };
    strict = await startService({}, { resolve: testResolver(answers) });
  });
  afterAll(async () => strict.close());

  const refusedFor = async (service: string) => {
    const answer = await post(strict, '/QuickLogin', { service, sessionId: 's' });
    return [answer.status, answer.body.code, answer.body.detail] as const;
  };

  it.each([
    ['http to a public name', 'http://public.test/cb', /https/],
    ['loopback IPv4', 'https://127.0.0.1/cb', /loopback/],
    ['loopback IPv6', 'https://[::1]/cb', /loopback/],
    ['private', 'https://10.0.0.1/cb', /private/],
    ['metadata (link-local)', 'https://169.254.169.254/latest/meta-data', /linkLocal/],
    ['IPv4-mapped loopback', 'https://[::ffff:127.0.0.1]/cb', /loopback/],
    ['decimal IP literal', 'https://2130706433/cb', /loopback/],
    ['octal IP literal', 'https://0177.0.0.1/cb', /loopback/],
    ['CGNAT', 'https://100.64.0.1/cb', /carrierGradeNat/],
    ['unique-local IPv6', 'https://[fd00::1]/cb', /uniqueLocal/],
    ['a name resolving to loopback', 'https://loopback.test/cb', /resolves to 127\.0\.0\.1/],
    ['a name with one private address', 'https://mixed.test/cb', /resolves to 10\.1\.2\.3/],
    ['credentials in the URL', 'https://user:secret@public.test/cb', /credentials/],
    ['not a URL', 'callback please', /absolute URL/],
  ])('refuses %s', async (_name, url, detail) => {
    const [status, code, text] = await refusedFor(url);
    expect([status, code]).toEqual([400, 'callback_url_refused']);
    expect(text).toMatch(detail);
  });

  it('accepts a public https name, and checks the address again when connecting (DNS rebinding)', async () => {
    const registration = await post(strict, '/QuickLogin', { service: 'https://public.test/cb', sessionId: 's' });
    expect(registration.status).toBe(200);
    // The name now answers with loopback: the delivery's own lookup refuses it before any connection.
    answers['public.test'] = ['127.0.0.1'];
    const tab = await TestTab.open(strict.wsUrl);
    await registered(strict, tab.tabId);
    const qr = await post(strict, '/QuickLogin', { mode: 'text', purpose: 'x', serviceId: registration.body.serviceId, tab: tab.tabId }, { cookie: tab.cookie });
    await post(strict, `${new URL(qr.body.signUrl).pathname}/Dev`, { decision: 'approve' });
    const id = `msg_${new URL(qr.body.signUrl).pathname.split('/').pop()}`;
    let callback = await strict.store.callbacks.get(id);
    await until(async () => ((callback = await strict.store.callbacks.get(id))?.attempts ?? 0) >= 1, 'the first delivery attempt');
    expect(callback).toMatchObject({ state: 'pending', attempts: 1, lastError: 'address_refused' });
    tab.close();
  });
});
