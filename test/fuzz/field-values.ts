import fc from 'fast-check';
import type { FuzzContext } from './context.js';
import { hugeString, oddJsonValue, oddString, withOddChar } from './strings.js';

/**
 * Near-valid values for fields of the Agent API and backend registration: valid in shape, odd in
 * content, so they pass the schema and reach the code that encodes, signs or resolves them.
 */

/** A base64 string of exactly `n` characters (the shape of a key or signature). */
export const b64 = (n: number) => fc.stringMatching(new RegExp(`^[A-Za-z0-9+/]{${n}}$`));

/** JIDs: the fuzzer's own, an unknown local one, a remote one, and the same with odd parts. */
export const jid = (ctx: FuzzContext): fc.Arbitrary<unknown> =>
  fc.oneof(
    fc.constantFrom(`${ctx.userName}@${ctx.componentDomain}`, `nobody@${ctx.componentDomain}`, `${ctx.userName}@${ctx.componentDomain}/res`, `x@remote.example`),
    withOddChar(`${ctx.userName}@${ctx.componentDomain}`),
    oddString.map((s) => `${s}@${ctx.componentDomain}`),
    oddString.map((s) => `${ctx.userName}@${ctx.componentDomain}/${s}`),
    oddString,
  );

export const xmlPayloads = fc.oneof(
  fc.constantFrom(
    '<x xmlns="urn:fuzz">hi</x>', '<x/>', '<x xmlns="urn:fuzz"><y/></x>', '<?xml version="1.0"?><x/>', '<!DOCTYPE x [<!ENTITY a "aaaa">]><x>&a;</x>',
    '<x>&#0;</x>', '<x>&#xD800;</x>', '<x a="\u0000"/>', '<x><![CDATA[]]>]]></x>', '<x xmlns:a="urn:a"><a:y/></x>', '<x>', '</x>', '<x></y>',
    '<body xmlns="jabber:client">hijack</body>', '<x xmlns="jabber:client"><iq type="set"/></x>', '<?pi x?><x/>', '<x/><y/>', 'text only',
    '<'.repeat(1_000), '<a>'.repeat(2_000) + '</a>'.repeat(2_000),
  ),
  withOddChar('<x xmlns="urn:fuzz">hi</x>'),
  oddString.map((s) => `<x xmlns="urn:fuzz">${s}</x>`),
  oddString.map((s) => `<x a="${s}"/>`),
  oddString,
);

/**
 * Callback URLs. Host names only where the service resolves them with a resolver the test gives it
 * (`ctx.callbackHosts`): against a real resolver every generated URL is refused before any name is
 * looked up (an IP literal outside the public ranges, another scheme, credentials, no URL at all),
 * so the fuzzer never makes the service ask DNS or reach a host off this machine.
 */
export const callbackUrl = (ctx: FuzzContext): fc.Arbitrary<unknown> =>
  fc.oneof(
    fc.constantFrom(
      'https://127.0.0.1/cb', 'https://[::1]/cb', 'https://[::ffff:127.0.0.1]/cb', 'https://[::7f00:1]/cb', 'https://10.0.0.1/cb', 'https://169.254.169.254/latest',
      'https://0.0.0.0/cb', 'https://2130706433/cb', 'https://0x7f.1/cb', 'http://127.0.0.1/cb', 'https://user:pw@127.0.0.1/cb', 'ftp://127.0.0.1/cb',
      'file:///etc/passwd', 'javascript:alert(1)', 'https:///cb', 'https://', '//127.0.0.1/cb', 'https://[::1', 'https://%zz/',
    ),
    ...(ctx.callbackHosts.length > 0
      ? [
          fc.constantFrom(...ctx.callbackHosts).map((h) => `https://${h}/callback`),
          fc.constantFrom(...ctx.callbackHosts).chain((h) => oddString.map((s) => `https://${h}/${s}`)),
          oddString.map((s) => `https://${s}/cb`),
        ]
      : [oddString.map((s) => `https://10.0.0.1/${s}`)]),
    oddString.filter((s) => !/^https?:/i.test(s)),
  );

/** Text with an odd character in it, or odd text: what a schema that only checks length lets through. */
export const oddText = (valid: string) => fc.oneof({ weight: 3, arbitrary: withOddChar(valid) }, { weight: 1, arbitrary: oddString });

export const properties = fc.oneof(
  { weight: 4, arbitrary: fc.dictionary(fc.constantFrom('FIRST', 'LAST', 'EMAIL'), oddText('Ada'), { minKeys: 1, maxKeys: 3 }) },
  { weight: 1, arbitrary: fc.dictionary(oddText('KEY'), fc.constant('v'), { minKeys: 1, maxKeys: 3 }) },
  { weight: 1, arbitrary: fc.dictionary(fc.constantFrom('FIRST', 'LAST', 'EMAIL'), oddJsonValue, { minKeys: 1, maxKeys: 3 }) },
  { weight: 1, arbitrary: fc.integer({ min: 51, max: 200 }).map((n) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`K${i}`, 'v']))) },
);

const PNG_BASE64 = Buffer.from('89504e470d0a1a0a', 'hex').toString('base64');
export const attachments = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.array(
      fc.record({
        fileName: fc.oneof({ weight: 3, arbitrary: oddText('id.png') }, { weight: 1, arbitrary: fc.constantFrom('../../etc/passwd', 'a\\b.png', 'x'.repeat(300)) }),
        contentType: fc.oneof({ weight: 4, arbitrary: fc.constantFrom('image/png', 'image/jpeg', 'application/pdf') }, { weight: 1, arbitrary: fc.constantFrom('text/html', 'image/svg+xml') }, { weight: 1, arbitrary: oddString }),
        content: fc.oneof({ weight: 4, arbitrary: fc.constant(PNG_BASE64) }, { weight: 1, arbitrary: b64(8) }, { weight: 1, arbitrary: oddString }, { weight: 1, arbitrary: hugeString }),
      }),
      { minLength: 1, maxLength: 3 },
    ),
  },
  { weight: 1, arbitrary: fc.array(fc.constant({ fileName: 'a.png', contentType: 'image/png', content: PNG_BASE64 }), { minLength: 6, maxLength: 8 }) },
  { weight: 1, arbitrary: oddJsonValue },
);
