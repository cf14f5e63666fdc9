import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../../src/agent/api-keys.js';
import { generateEd25519 } from '../../src/identity/keys.js';
import { expectProblem, startBadInputService } from '../helpers/bad-input.js';
import { post, type Answer } from '../helpers/http.js';
import type { TestService } from '../helpers/service.js';

// Inputs a hostile client sends, in the fields of a request body: each was once a 500 or an accepted value
// that should not have been. (On the wire: bad-input-protocol.test.ts.)
let service: TestService;
let jwt: string;
const domain = () => service.app.tabwire.config.xmppComponentDomain;
const auth = () => ({ authorization: `Bearer ${jwt}` });

beforeAll(async () => {
  ({ service, jwt } = await startBadInputService());
});
afterAll(async () => service.close());

/** A validation problem whose errors point at `pointer`. */
function expectInvalidAt(answer: Answer, pointer: string): void {
  expectProblem(answer, 400, 'validation_failed');
  expect(answer.body.errors).toEqual(expect.arrayContaining([expect.objectContaining({ pointer, detail: expect.any(String) })]));
}

describe('text the XML stanza cannot carry is a 400, not a 500 (SendTextMessage)', () => {
  const send = (body: Record<string, unknown>) => post(service, '/Agent/Xmpp/SendTextMessage', { to: `bob@${domain()}`, message: 'hi', ...body }, auth());

  it.each([
    ['NUL', 'a\u0000b'],
    ['backspace', 'a\bb'],
    ['a lone high surrogate', 'a\ud800b'],
    ['a lone low surrogate', '\udfff'],
    ['U+FFFF', 'a\uffffb'],
    ['U+FFFE', '\ufffe'],
    ['a C1 control', 'a\u0085b'],
  ])('message or subject with %s answered 500', async (_name, text) => {
    expectInvalidAt(await send({ message: text }), '/message');
    expectInvalidAt(await send({ subject: text }), '/subject');
  });

  it('a to or id attribute with characters XML forbids was put into the stanza unchecked', async () => {
    expectInvalidAt(await send({ id: 'x\u0000y' }), '/id');
    expectInvalidAt(await send({ id: '\ud800' }), '/id');
    expectInvalidAt(await send({ to: `bob\u0001@${domain()}` }), '/to');
    expectInvalidAt(await send({ to: `bob@${domain()}/\ud800` }), '/to');
  });

  it('every bad field is named in one answer', async () => {
    const answer = await send({ message: '\u0000', subject: '\u0007', id: '\uffff' });
    expect(answer.body.errors.map((e: { pointer: string }) => e.pointer).sort()).toEqual(['/id', '/message', '/subject']);
    expect(answer.body.errors.find((e: { pointer: string }) => e.pointer === '/id').detail).toContain('XML 1.0');
  });

  it('a message body keeps tab, line feed, carriage return and characters outside the BMP', async () => {
    const answer = await send({ message: 'line 1\r\n\tline 2 \u{1F600}', subject: 'Grüße \u{1F600}' });
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ sent: true });
  });
});

describe('identity applications with unpaired surrogates are a 400, not a 500 (ApplyId)', () => {
  const apply = (over: Record<string, unknown>) =>
    post(service, '/Agent/Legal/ApplyId', { properties: { FIRST: 'Ada' }, publicKey: generateEd25519().publicKey, signature: `${'A'.repeat(86)}==`, ...over }, auth());
  const attachment = (fileName: string) => ({ fileName, contentType: 'image/png', content: 'iVBORw0KGgo=' });

  it('a property value with a lone surrogate failed canonicalisation with a 500', async () => {
    expectInvalidAt(await apply({ properties: { FIRST: 'Ada\ud800' } }), '/properties/FIRST');
  });

  it('an attachment file name with a lone surrogate failed canonicalisation with a 500', async () => {
    expectInvalidAt(await apply({ attachments: [attachment('scan\udc00.png')] }), '/attachments/0/fileName');
  });

  it('control characters in property values and file names are refused with a pointer', async () => {
    expectInvalidAt(await apply({ properties: { FIRST: 'Ada\u001b[31m' } }), '/properties/FIRST');
    expectInvalidAt(await apply({ attachments: [attachment('scan\u0085.png')] }), '/attachments/0/fileName');
  });

  it('a bad property name is pointed at', async () => {
    const answer = await apply({ properties: { 'a/b': 'x' } });
    expectInvalidAt(answer, '/properties/a~1b');
  });
});

describe('passwords with unpaired surrogates are refused', () => {
  it('"\\ud800"×8+"pw" was accepted and then logged in as "\\udfff"×8+"pw" (both became U+FFFD)', async () => {
    const created = await post(service, '/Agent/Account/Create', { userName: 'surrogate', password: `${'\ud800'.repeat(8)}pw` }, { 'x-api-key': (await createApiKey(service.store.apiKeys, service.clock, null)).key });
    expectInvalidAt(created, '/password');
    expectInvalidAt(await post(service, '/Agent/Account/Login', { userName: 'ada', password: `${'\udfff'.repeat(8)}pw`, seconds: 60 }), '/password');
  });
});

describe('free text shown to people', () => {
  it('a QR purpose with a control character is refused with a pointer', async () => {
    const answer = await post(service, '/QuickLogin', { mode: 'text', purpose: 'Log in\u0000', serviceId: '', tab: '' });
    expectInvalidAt(answer, '/purpose');
    expect(answer.body.errors[0].detail).toContain('control characters');
  });
});

describe('callback URLs in IPv4-compatible IPv6 form (SSRF)', () => {
  it.each(['https://[::7f00:1]/cb', 'https://[::127.0.0.1]/cb', 'https://[::ffff:127.0.0.1]/cb', 'https://[::a9fe:a9fe]/cb'])(
    '%s was accepted as a backend callback',
    async (url) => {
      expectProblem(await post(service, '/QuickLogin', { service: url, sessionId: 'backend-session' }), 400, 'callback_url_refused');
    },
  );
});
