import fc from 'fast-check';

/**
 * Odd text and odd JSON values for the fuzzer. Each list is what a hostile or broken client sends:
 * characters XML forbids (XML 1.0 §2.2), lone UTF-16 surrogates (not encodable as UTF-8, RFC 3629
 * §3), C0/C1 controls, bidi overrides, non-characters, and strings that mean something to a parser.
 */
export const LONE_SURROGATES = ['\ud800', '\udbff', '\udc00', '\udfff'] as const;
export const CONTROLS = ['\u0000', '\u0001', '\b', '\u000b', '\u000c', '\u001b', '\u001f', '\u007f', '\u0080', '\u0085', '\u009b', '\u009f'] as const;
export const NON_CHARACTERS = ['\ufffe', '\uffff', '\ufdd0', '\u{10ffff}'] as const;
export const OTHER_ODD = [
  '\t', '\n', '\r', '\u00a0', '\u00ad', '\ufeff', '\ufffd', '\u2028', '\u2029', '\u202e', '\u200b', '\u200d', '\u0301',
  '\ud83d\ude00', '\u{1d11e}', 'ß', 'İ', 'ﬃ', '\u212a', '\u00ff',
  '"', '\\', '<', '>', '&', "'", '%', '/', '?', '#', ';', '=', ',', ' ', '*', '$', '{', '}',
] as const;

/** One odd character; the classes that break encoders (surrogates, controls, non-characters) come often. */
export const oddChar: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...LONE_SURROGATES) },
  { weight: 3, arbitrary: fc.constantFrom(...CONTROLS) },
  { weight: 1, arbitrary: fc.constantFrom(...NON_CHARACTERS) },
  { weight: 3, arbitrary: fc.constantFrom(...OTHER_ODD) },
);

/** Any UTF-16 code unit, so lone surrogates and non-characters turn up, not only what `fc.string` makes. */
export const anyCodeUnit: fc.Arbitrary<string> = fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c));

const plainChar = fc.constantFrom('a', 'Z', '0', '9', '-', '_', '.');

/** Strings that mean something to some parser, path or template engine. */
export const MEANINGFUL = [
  '', ' ', 'null', 'undefined', 'NaN', 'true', '0', '-1', '__proto__', 'constructor', 'prototype', 'toString',
  '../../../../etc/passwd', '..%2f..%2f', '%zz', '%', '%00', '%ed%a0%80', '%c0%af', '%u0041', '${7*7}', '{{7*7}}',
  "' OR '1'='1' --", '"; DROP TABLE accounts; --', '<script>alert(1)</script>', ']]>', '<!--', '&amp;', '&#0;',
  'javascript:alert(1)', 'data:text/html,x', 'file:///etc/passwd', '\\\\server\\share', 'C:\\Windows',
  'a'.repeat(64), 'a'.repeat(65), 'a'.repeat(256), 'a'.repeat(1025),
] as const;

/** A long run of one character (1 KiB to ~100 KiB) for size limits: bodies, fields, headers, paths. */
export const hugeString: fc.Arbitrary<string> = fc
  .tuple(fc.constantFrom('a', '\u0000', '\ud800', 'é', '😀', '%', '['), fc.integer({ min: 1_000, max: 100_000 }))
  .map(([c, n]) => c.repeat(Math.ceil(n / c.length)));

/** Short strings made of odd and plain characters, any code unit, or a meaningful constant; now and then huge. */
export const oddString: fc.Arbitrary<string> = fc.oneof(
  { weight: 5, arbitrary: fc.string({ unit: fc.oneof({ weight: 3, arbitrary: oddChar }, anyCodeUnit, plainChar), maxLength: 40 }) },
  { weight: 3, arbitrary: fc.constantFrom(...MEANINGFUL) },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 30 }) },
  { weight: 1, arbitrary: hugeString },
);

/** `valid` with one odd character put in somewhere (the shape a schema might still accept). */
export function withOddChar(valid: string): fc.Arbitrary<string> {
  return fc.tuple(oddChar, fc.nat()).map(([c, at]) => {
    const i = at % (valid.length + 1);
    return valid.slice(0, i) + c + valid.slice(i);
  });
}

/** A value of the wrong JSON type, or an odd number. */
export const oddJsonValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(null, true, false, 0, -0, -1, 1.5, 1e308, -1e308, Number.MAX_SAFE_INTEGER + 2, 2 ** 31, [], {}, [null], { '': '' }),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  oddString,
  fc.array(oddString, { maxLength: 3 }),
  fc.dictionary(oddString, oddString, { maxKeys: 3 }),
  fc.jsonValue({ maxDepth: 3 }),
);

/** Nested arrays or objects `depth` deep, as text (parsers that recurse run out of stack). */
export const deepJsonText: fc.Arbitrary<string> = fc
  .tuple(fc.oneof(fc.integer({ min: 100, max: 3_000 }), fc.integer({ min: 3_000, max: 50_000 })), fc.boolean())
  .map(([depth, arrays]) => (arrays ? '['.repeat(depth) + ']'.repeat(depth) : '{"a":'.repeat(depth) + '1' + '}'.repeat(depth)));

/** Texts that are not JSON, or JSON of an unexpected shape. */
export const badJsonText: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    '', ' ', '{', '}', '{"a":}', "{'a':1}", '{"a":1,}', '{a:1}', 'NaN', 'Infinity', '-', '01', '1e999', '"\\ud800"', '"\\u00"',
    '[1,2', 'nul', 'null', 'true', '1', '"str"', '[]', '[{}]', '\u0000', '\ufeff{}', '{"__proto__":{"polluted":1}}',
    '{"constructor":{"prototype":{"polluted":1}}}', '{"a":1}{"b":2}', '{"a":1} trailing', '{"a":"\u0000"}', '{"a":"\\u0000"}',
  ),
  deepJsonText,
  oddString,
);

/** Bytes that are not UTF-8 (overlong forms, encoded surrogates, stray continuation bytes). */
export const badUtf8: fc.Arbitrary<Buffer> = fc
  .array(fc.constantFrom([0xff], [0xfe], [0xc0, 0x80], [0xed, 0xa0, 0x80], [0x80], [0xf4, 0x90, 0x80, 0x80], [0xe2, 0x82], [0x22], [0x7b], [0x7d]), {
    minLength: 1,
    maxLength: 20,
  })
  .map((parts) => Buffer.from(parts.flat()));

/** Percent-encodes the UTF-8 of `text` (lone surrogates become U+FFFD, as a browser's URL parser does). */
export const percentEncode = (text: string): string =>
  [...Buffer.from(text, 'utf8')].map((b) => (/[A-Za-z0-9_.~-]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${b.toString(16).padStart(2, '0').toUpperCase()}`)).join('');

/** A path segment as a client might write it: valid, odd but encoded, badly encoded, raw, or very long. */
export function pathSegment(valid: fc.Arbitrary<string>): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 6, arbitrary: valid },
    { weight: 2, arbitrary: oddString.map(percentEncode) },
    { weight: 2, arbitrary: fc.constantFrom('%zz', '%', '%e', '%ed%a0%80', '%c0%af', '%00', '%2F', '..', '.', '%2e%2e', '%u0041', '%FF%FE') },
    { weight: 1, arbitrary: fc.string({ unit: fc.oneof(oddChar, plainChar), minLength: 1, maxLength: 20 }) },
    { weight: 1, arbitrary: fc.integer({ min: 65, max: 20_000 }).map((n) => 'A'.repeat(n)) },
  );
}

/** A query string to append (with its `?`), mostly none. */
export const oddQuery: fc.Arbitrary<string> = fc.oneof(
  { weight: 6, arbitrary: fc.constant('') },
  { weight: 1, arbitrary: fc.constantFrom('?', '?a', '?a=1&a=2', '?__proto__[x]=1', '?constructor[prototype][x]=1', '?%zz=1', '?a=%zz', '?a[]=1&a[b]=2', '?#frag', '?a=1#x') },
  { weight: 1, arbitrary: oddString.map((s) => `?q=${percentEncode(s)}`) },
  { weight: 1, arbitrary: fc.integer({ min: 1_000, max: 20_000 }).map((n) => `?x=${'b'.repeat(n)}`) },
);

/** Header values must not hold CR or LF (that would write a different request, not an odd value). */
export const headerSafe = (value: string): string => value.replace(/[\r\n]/g, '');
