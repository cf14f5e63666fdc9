import { verify, createPublicKey } from 'node:crypto';
import canonicalize from 'canonicalize';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchSignInfo, postDecision } from '../../src/cli/signer.js';
import { privateKeyFromPem } from '../../src/identity/keys.js';
import type { QuickLoginResult } from '../../src/protocol/events.js';
import { get, post, registered } from '../helpers/http.js';
import { decodePng, decodeText } from '../helpers/qr-decode.js';
import { makeIdentity, startService, type TestService } from '../helpers/service.js';
import { TestTab } from '../helpers/tab.js';

let service: TestService;
let ada: Awaited<ReturnType<typeof makeIdentity>>;

beforeAll(async () => {
  service = await startService();
  ada = await makeIdentity(service, { FIRST: 'Ada', LAST: 'Lovelace', PNR: '18151210', COUNTRY: 'GB' });
});
afterAll(async () => service.close());

async function openTab(): Promise<TestTab> {
  const tab = await TestTab.open(service.wsUrl);
  await registered(service, tab.tabId);
  return tab;
}

describe('QuickLogin from QR request to signature to the live tab', () => {
  for (const mode of ['image', 'base64', 'text'] as const) {
    it(`${mode} mode: the approved result reaches the tab with exactly the filtered properties`, async () => {
      const tab = await openTab();
      const qr = await post(
        service,
        '/QuickLogin',
        { mode, purpose: `Log in (${mode})`, serviceId: '', tab: tab.tabId, propertyFilter: 'FIRST, COUNTRY' },
        { cookie: tab.cookie },
      );
      expect(qr.status).toBe(200);
      const expectedFields = { image: ['height', 'signUrl', 'src', 'width'], base64: ['base64', 'contentType', 'height', 'signUrl', 'width'], text: ['signUrl', 'text'] };
      expect(Object.keys(qr.body).sort()).toEqual(expectedFields[mode]);
      expect(qr.body.signUrl).toMatch(new RegExp(`^${service.baseUrl}/QuickLogin/Sign/[A-Za-z0-9_-]{22}$`));

      const info = await fetchSignInfo(qr.body.signUrl);
      expect(info.purpose).toBe(`Log in (${mode})`);
      const answer = await postDecision(qr.body.signUrl, info, ada.identity.id, privateKeyFromPem(ada.privateKeyPem), 'approve');
      expect(answer.state).toBe('approved');

      const event = await tab.next('SignatureReceived');
      const result = event.data as QuickLoginResult;
      expect(result.Id).toBe(ada.identity.id);
      expect(result.Properties).toEqual({ FIRST: 'Ada', COUNTRY: 'GB' });
      expect(result.Purpose).toBe(`Log in (${mode})`);
      expect(result.State).toBe('Approved');
      expect(typeof event.id).toBe('number');
      // ServerSignature verifies with the published key over the canonical JSON of the rest.
      const { body: jwks } = await get(service, '/.well-known/tabwire/result-keys');
      const key = createPublicKey({ key: jwks.keys[0], format: 'jwk' });
      const { ServerSignature, ...unsigned } = result;
      expect(verify(null, Buffer.from(canonicalize(unsigned)!), key, Buffer.from(ServerSignature, 'base64'))).toBe(true);
      expect(verify(null, Buffer.from(canonicalize({ ...unsigned, Purpose: 'other' })!), key, Buffer.from(ServerSignature, 'base64'))).toBe(false);
      tab.close();
    });
  }

  it('without a filter every property is delivered; a rejection delivers SignatureRejected', async () => {
    const tab = await openTab();
    const first = await post(service, '/QuickLogin', { mode: 'text', purpose: 'All', serviceId: '', tab: tab.tabId }, { cookie: tab.cookie });
    const info = await fetchSignInfo(first.body.signUrl);
    await postDecision(first.body.signUrl, info, ada.identity.id, privateKeyFromPem(ada.privateKeyPem), 'approve');
    expect((await tab.next('SignatureReceived')).data).toMatchObject({
      Properties: { FIRST: 'Ada', LAST: 'Lovelace', PNR: '18151210', COUNTRY: 'GB' },
    });

    const second = await post(service, '/QuickLogin', { mode: 'text', purpose: 'Say no', serviceId: '', tab: tab.tabId }, { cookie: tab.cookie });
    const info2 = await fetchSignInfo(second.body.signUrl);
    const answer = await postDecision(second.body.signUrl, info2, ada.identity.id, privateKeyFromPem(ada.privateKeyPem), 'reject');
    expect(answer.state).toBe('rejected');
    const rejected = await tab.next('SignatureRejected');
    expect(rejected.data).toEqual({ Id: ada.identity.id, Purpose: 'Say no' });
    expect(tab.events.filter((e) => e.type === 'SignatureReceived')).toHaveLength(1);
    tab.close();
  });

  it('each call issues a fresh code', async () => {
    const tab = await openTab();
    const body = { mode: 'image', purpose: 'Fresh', serviceId: '', tab: tab.tabId };
    const a = await post(service, '/QuickLogin', body, { cookie: tab.cookie });
    const b = await post(service, '/QuickLogin', body, { cookie: tab.cookie });
    expect(a.body.signUrl).not.toBe(b.body.signUrl);
    tab.close();
  });
});

describe('QR codes decode back to signUrl', () => {
  it('base64 PNG, src PNG and text block all decode with an independent decoder', async () => {
    const tab = await openTab();
    const ask = (mode: string) => post(service, '/QuickLogin', { mode, purpose: 'Decode', serviceId: '', tab: tab.tabId }, { cookie: tab.cookie });

    const b64 = await ask('base64');
    expect(b64.body.contentType).toBe('image/png');
    const png = Buffer.from(b64.body.base64, 'base64');
    expect(decodePng(png)).toBe(b64.body.signUrl);
    expect(png.readUInt32BE(16)).toBe(b64.body.width);
    expect(png.readUInt32BE(20)).toBe(b64.body.height);

    const image = await ask('image');
    // Absolute: existing pages put src into <img src> as given (docs/signing.md "QR images").
    expect(image.body.src).toMatch(new RegExp(`^${service.publicBaseUrl}/QuickLogin/Qr/[A-Za-z0-9_-]{22}\\.png$`));
    const fetched = await get(service, new URL(image.body.src).pathname);
    expect(fetched.status).toBe(200);
    expect(fetched.contentType).toBe('image/png');
    expect(fetched.headers.get('cache-control')).toMatch(/max-age=\d+/);
    expect(decodePng(fetched.body)).toBe(image.body.signUrl);
    expect(fetched.body.readUInt32BE(16)).toBe(image.body.width);

    const text = await ask('text');
    expect(decodeText(text.body.text)).toBe(text.body.signUrl);
    tab.close();
  });

  it('the image is served while the code is valid and 404 after', async () => {
    const tab = await openTab();
    const image = await post(service, '/QuickLogin', { mode: 'image', purpose: 'Expire', serviceId: '', tab: tab.tabId }, { cookie: tab.cookie });
    const path = new URL(image.body.src).pathname;
    expect((await get(service, path)).status).toBe(200);
    service.clock.advance(300_000);
    const gone = await get(service, path);
    expect(gone.status).toBe(404);
    expect(gone.contentType).toContain('application/problem+json');
    expect(gone.body.code).toBe('not_found');
    tab.close();
  });
});
