import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { get, post } from '../helpers/http.js';
import { decodePng, decodeText } from '../helpers/qr-decode.js';
import { startService, type TestService } from '../helpers/service.js';

/**
 * Every QR mode, through HTTP, for a short and a long public base URL: the symbol size (and so the
 * PNG size `image` mode announces without encoding) changes with the base, and every mode must
 * still decode with an independent decoder.
 */
const BASES = {
  'short (loopback default)': undefined,
  long: 'https://login.identity-services.a-rather-long-organisation-name.example.com:8443',
} as const;

describe.each(Object.entries(BASES))('QR modes with a %s public base URL', (_, publicBaseUrl) => {
  let service: TestService;
  beforeAll(async () => {
    service = await startService(publicBaseUrl === undefined ? {} : { publicBaseUrl });
  });
  afterAll(async () => {
    await service.close();
  });

  const ask = async (mode: string) => {
    // No tab: a code for a backend or a page that polls; nothing about the tab matters here.
    const answer = await post(service, '/QuickLogin', { mode, purpose: 'Decode', serviceId: '', tab: '' });
    expect(answer.status).toBe(200);
    expect(answer.body.signUrl).toMatch(new RegExp(`^${service.publicBaseUrl}/QuickLogin/Sign/[A-Za-z0-9_-]{22}$`));
    return answer.body;
  };

  it('text, base64 and the image all decode to the signUrl; image mode announces the size base64 has', async () => {
    const text = await ask('text');
    expect(decodeText(text.text)).toBe(text.signUrl);

    const b64 = await ask('base64');
    const png = Buffer.from(b64.base64, 'base64');
    expect(decodePng(png)).toBe(b64.signUrl);
    expect([png.readUInt32BE(16), png.readUInt32BE(20)]).toEqual([b64.width, b64.height]);

    const image = await ask('image');
    expect([image.width, image.height]).toEqual([b64.width, b64.height]);
    const fetched = await get(service, new URL(image.src).pathname);
    expect([fetched.status, fetched.contentType]).toEqual([200, 'image/png']);
    expect(decodePng(fetched.body)).toBe(image.signUrl);
    expect([fetched.body.readUInt32BE(16), fetched.body.readUInt32BE(20)]).toEqual([image.width, image.height]);
  });
});
