import { afterEach, describe, expect, it } from 'vitest';
import { counter } from '../helpers/http.js';
import { decodePng, decodeText } from '../helpers/qr-decode.js';
import { startService, type TestService } from '../helpers/service.js';

/**
 * Under load, `text` and `base64` answers come from the encoder thread (docs/signing.md "Encoder
 * thread"): through HTTP they must be the same answers a request makes itself, for codes that are
 * stored, bound to what the request asked, and handed out once.
 */
let service: TestService | undefined;
afterEach(async () => {
  await service?.close();
  service = undefined;
});

// Derived codes are made from their request, so there is nothing to make ahead: the thread serves stored codes only.
const LOAD = { qrRequestsPerAddressPerMinute: 10_000_000, qrDerivedCodes: false };

/** 200 QR requests at once (above the thread's threshold of ~160 a second), answers parsed. */
async function burst(s: TestService, mode: 'text' | 'base64'): Promise<Record<string, any>[]> {
  const answers = await Promise.all(
    Array.from({ length: 200 }, () => s.app.inject({ method: 'POST', url: '/QuickLogin', payload: { mode, purpose: 'Thread', serviceId: '', tab: '' } })),
  );
  return answers.map((answer) => {
    expect(answer.statusCode).toBe(200);
    expect(answer.headers['content-type']).toBe('application/json; charset=utf-8');
    return answer.json();
  });
}

/** Bursts until `made = ahead` answers have been counted: the thread starts and delivers in its own time. */
async function burstsUntilAhead(s: TestService, mode: 'text' | 'base64'): Promise<Record<string, any>[]> {
  const all: Record<string, any>[] = [];
  while ((await counter(s, 'tabwire_qr_answers_total', { made: 'ahead' })) === 0) all.push(...(await burst(s, mode)));
  all.push(...(await burst(s, mode)));
  return all;
}

const codeOf = (signUrl: string): string => signUrl.slice(signUrl.lastIndexOf('/') + 1);

describe('QR answers made ahead on the encoder thread', () => {
  it('text: every answer is its own stored code, once, with the purpose asked; a sample decodes', async () => {
    service = await startService(LOAD);
    const answers = await burstsUntilAhead(service, 'text');
    const ahead = await counter(service, 'tabwire_qr_answers_total', { made: 'ahead' });
    const onRequest = await counter(service, 'tabwire_qr_answers_total', { made: 'on_request' });
    expect(ahead + onRequest).toBe(answers.length);
    const codes = answers.map((a) => codeOf(a.signUrl as string));
    expect(new Set(codes).size).toBe(codes.length);
    // The last answers were made ahead (the counter says some were): each is stored and means what was asked.
    for (const answer of answers.slice(-40)) {
      expect(Object.keys(answer)).toEqual(['signUrl', 'text']);
      const record = await service.store.codes.get(codeOf(answer.signUrl));
      expect(record?.purpose).toBe('Thread');
      expect(record?.state).toBe('pending');
    }
    for (const answer of answers.slice(-3)) expect(decodeText(answer.text)).toBe(answer.signUrl);
  });

  it('base64: the answers made ahead have the fields and the PNG a request makes', async () => {
    service = await startService(LOAD);
    const answers = await burstsUntilAhead(service, 'base64');
    for (const answer of answers.slice(-3)) {
      expect(Object.keys(answer)).toEqual(['signUrl', 'base64', 'contentType', 'width', 'height']);
      const png = Buffer.from(answer.base64, 'base64');
      expect(decodePng(png)).toBe(answer.signUrl);
      expect([png.readUInt32BE(16), png.readUInt32BE(20)]).toEqual([answer.width, answer.height]);
      expect((await service.store.codes.get(codeOf(answer.signUrl)))?.state).toBe('pending');
    }
  });

  it('with qrEncoderThread off, every answer is made on the request', async () => {
    service = await startService({ ...LOAD, qrEncoderThread: false });
    for (let round = 0; round < 5; round++) await burst(service, 'text');
    expect(await counter(service, 'tabwire_qr_answers_total', { made: 'on_request' })).toBe(1_000);
    expect(await counter(service, 'tabwire_qr_answers_total', { made: 'ahead' })).toBe(0);
  });
});
