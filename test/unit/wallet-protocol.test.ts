import { generateKeyPairSync, sign } from 'node:crypto';
import canonicalize from 'canonicalize';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { applicationMessage } from '../../src/identity/application.js';
import { buildChallenge as serviceChallenge, signedMessage } from '../../src/quicklogin/challenge.js';
import { canonicalJson } from '../../src/wallet/canonical-json.js';
import { applicationText, buildChallenge, nonceOf, signedText } from '../../src/wallet/challenge.js';
import { checkChallenge, checkSignUrl, disclosed, filterNames, RequestRefused, signUrlFromLocation, type IdentityView, type SignInfo } from '../../src/wallet/request.js';

// The wallet builds the signed texts itself (it cannot import the service's Node modules): they must be
// byte for byte what the service verifies, or every signature the wallet makes is refused.
const jcs = (value: unknown): string => (canonicalize as unknown as (v: unknown) => string)(value);

describe('the wallet signs exactly what the service verifies', () => {
  it('the challenge and the decision text equal the service builders for any fields', () => {
    const fields = fc.record({
      code: fc.string(),
      purpose: fc.string({ unit: 'grapheme' }),
      origin: fc.option(fc.webUrl().map((u) => new URL(u).origin), { nil: null }),
      service: fc.domain(),
      expires: fc.integer({ min: 0, max: 2 ** 40 }),
      nonce: fc.base64String(),
    });
    fc.assert(
      fc.property(fields, fc.string(), fc.constantFrom('approve' as const, 'reject' as const), (f, legalId, decision) => {
        const challenge = buildChallenge(f);
        expect(challenge).toBe(serviceChallenge(f));
        expect(Buffer.from(signedText(challenge, legalId, decision), 'utf8')).toEqual(signedMessage(challenge, legalId, decision));
      }),
    );
  });

  it('the ApplyId proof-of-possession text equals applicationMessage (RFC 8785 keys sorted by UTF-16 units)', () => {
    const application = {
      properties: { LAST: 'Hopper', FIRST: 'Grace', 'é': 'x', '\u{1F600}': 'y', Z: '"quoted"\n' },
      attachments: [{ fileName: 'b.png', contentType: 'image/png', content: 'AAAA' }],
      publicKey: 'A'.repeat(43) + '=',
    };
    expect(Buffer.from(applicationText('grace', application), 'utf8')).toEqual(applicationMessage('grace', application));
    const bare = { properties: { FIRST: 'Ada' }, publicKey: 'B'.repeat(43) + '=' };
    expect(Buffer.from(applicationText('ada', bare), 'utf8')).toEqual(applicationMessage('ada', bare));
  });

  it('canonicalJson equals the canonicalize package for any JSON value', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        expect(canonicalJson(value)).toBe(jcs(value));
      }),
    );
  });

  it('nonceOf reads the nonce line; a challenge without one gives "" (so the rebuilt challenge differs)', () => {
    expect(nonceOf('tabwire-quicklogin-v1\ncode:x\nnonce:abc_-')).toBe('abc_-');
    expect(nonceOf('tabwire-quicklogin-v1\ncode:x')).toBe('');
  });

  it('a signature over the wallet text verifies with the service message (one key, both builders)', () => {
    const { privateKey } = generateKeyPairSync('ed25519');
    const challenge = buildChallenge({ code: 'c', purpose: 'p', origin: null, service: 's', expires: 1, nonce: 'n' });
    const a = sign(null, Buffer.from(signedText(challenge, 'id@x', 'approve'), 'utf8'), privateKey);
    const b = sign(null, signedMessage(challenge, 'id@x', 'approve'), privateKey);
    expect(a).toEqual(b);
  });
});

const SERVICE = 'https://auth.example.org';
const info = (over: Partial<SignInfo> = {}): SignInfo => {
  const base = { code: 'abcDEF123_-abcDEF123_-', purpose: 'Log in', origin: 'https://shop.example', expires: 1_800_000_000, nonce: 'n0nce' };
  const fields = { ...base, ...over };
  return {
    code: fields.code,
    purpose: fields.purpose,
    origin: fields.origin,
    requester: fields.origin === null ? null : new URL(fields.origin).host,
    expires: fields.expires,
    challenge: over.challenge ?? serviceChallenge({ ...fields, service: 'auth.example.org' }),
    propertyFilter: over.propertyFilter ?? null,
    attachmentFilter: over.attachmentFilter ?? null,
  };
};

describe('which requests the wallet opens', () => {
  it('reads the app link from #sign= first, then ?sign=', () => {
    const url = `${SERVICE}/QuickLogin/Sign/abc`;
    expect(signUrlFromLocation({ hash: `#sign=${encodeURIComponent(url)}`, search: '?sign=other' })).toBe(url);
    expect(signUrlFromLocation({ hash: '', search: `?sign=${encodeURIComponent(url)}` })).toBe(url);
    expect(signUrlFromLocation({ hash: '#x=1', search: '' })).toBeUndefined();
  });

  it('accepts a signUrl of the identity\'s service only, and says which host it belongs to', () => {
    expect(checkSignUrl(` ${SERVICE}/QuickLogin/Sign/abc_-9 `, SERVICE).pathname).toBe('/QuickLogin/Sign/abc_-9');
    expect(() => checkSignUrl('https://auth.example.org.evil.test/QuickLogin/Sign/abc', SERVICE)).toThrow(
      'This request is for auth.example.org.evil.test, but your identity belongs to auth.example.org.',
    );
    // Another port or scheme is another service.
    expect(() => checkSignUrl('https://auth.example.org:8443/QuickLogin/Sign/abc', SERVICE)).toThrow(RequestRefused);
    expect(() => checkSignUrl('http://auth.example.org/QuickLogin/Sign/abc', SERVICE)).toThrow(RequestRefused);
  });

  it('refuses what is not a signUrl: other paths, queries, fragments, schemes, non-URLs', () => {
    for (const text of [
      `${SERVICE}/Agent/Account/Info`,
      `${SERVICE}/QuickLogin/Sign/abc/Dev`,
      `${SERVICE}/QuickLogin/Sign/abc?x=1`,
      `${SERVICE}/QuickLogin/Sign/abc#x`,
      'javascript:alert(1)//QuickLogin/Sign/abc',
      'not a url',
    ]) {
      expect(() => checkSignUrl(text, SERVICE), text).toThrow(RequestRefused);
    }
  });

  it('refuses a request whose challenge says anything but the fields shown, or another code', () => {
    const url = new URL(`${SERVICE}/QuickLogin/Sign/abcDEF123_-abcDEF123_-`);
    expect(() => checkChallenge(info(), url)).not.toThrow();
    const honest = info();
    expect(() => checkChallenge({ ...honest, purpose: 'Log in to something else' }, url)).toThrow(RequestRefused);
    expect(() => checkChallenge({ ...honest, origin: 'https://shop.example.evil' }, url)).toThrow(RequestRefused);
    expect(() => checkChallenge({ ...honest, expires: honest.expires + 1 }, url)).toThrow(RequestRefused);
    // A challenge made for another service host.
    const other = serviceChallenge({ code: honest.code, purpose: 'Log in', origin: 'https://shop.example', service: 'evil.test', expires: honest.expires, nonce: 'n0nce' });
    expect(() => checkChallenge({ ...honest, challenge: other }, url)).toThrow(RequestRefused);
    expect(() => checkChallenge(honest, new URL(`${SERVICE}/QuickLogin/Sign/another`))).toThrow(RequestRefused);
  });

  it('shows as disclosed exactly what the filters let through (names trimmed; blank = everything)', () => {
    const identity = {
      Properties: { FIRST: 'Grace', LAST: 'Hopper', COUNTRY: 'US' },
      Attachments: [{ FileName: 'a.png' }, { FileName: 'b.pdf' }],
    } as unknown as IdentityView;
    expect(disclosed(identity, info({ propertyFilter: ' LAST , COUNTRY', attachmentFilter: 'b.pdf' }))).toEqual({
      properties: [['LAST', 'Hopper'], ['COUNTRY', 'US']],
      attachments: ['b.pdf'],
    });
    expect(disclosed(identity, info({ propertyFilter: '  ' })).properties).toHaveLength(3);
    expect(filterNames(null)).toBeNull();
    expect(filterNames(' , ')).toBeNull();
  });
});
