import { FormatRegistry, Type, type StringOptions, type TString } from '@sinclair/typebox';
import { isXmlText } from '../xmpp/xml-payload.js';

/**
 * The one rule for free text in requests (docs/input.md), enforced by the route schemas through four
 * string formats. Every string field of every route uses one of the builders below.
 *
 * - `anyText`: no unpaired surrogate (U+D800-U+DFFF alone). JSON can carry one (`"\ud800"`), but it is not
 *   a Unicode scalar value, cannot be encoded as UTF-8 (it becomes U+FFFD, so two different strings hash,
 *   compare and sign alike), and canonical JSON, XML and URI encoding refuse it. No U+0000 either:
 *   PostgreSQL text cannot hold it, nor be queried with it, and no identifier, URL or password needs it.
 * - `humanText`: text shown to people (a purpose, a property value, a file name, a subject): also no control
 *   characters (C0 U+0000-U+001F, DEL, C1 U+0080-U+009F; Unicode category Cc) and no U+FFFE/U+FFFF.
 * - `multilineText`: human text that may span lines: as humanText, but tab, line feed and carriage return pass.
 * - `xmlText`: anything that becomes part of an XMPP stanza: only characters XML 1.0 allows (§2.2 `Char`).
 *
 * humanText and multilineText are subsets of xmlText, so a human-readable field may go into a stanza as is.
 */
export const TEXT_FORMATS = {
  text: { test: (s: string) => !/[\u0000\uD800-\uDFFF]/u.test(s), detail: 'must not contain U+0000 or unpaired surrogates (U+D800-U+DFFF)' },
  'human-text': {
    test: (s: string) => !/[\u0000-\u001F\u007F-\u009F\uD800-\uDFFF\uFFFE\uFFFF]/u.test(s),
    detail: 'must not contain control characters (U+0000-U+001F, U+007F-U+009F), unpaired surrogates or U+FFFE/U+FFFF',
  },
  'multiline-text': {
    test: (s: string) => !/[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F\uD800-\uDFFF\uFFFE\uFFFF]/u.test(s),
    detail:
      'must not contain control characters other than tab, line feed and carriage return (U+0000-U+001F, U+007F-U+009F), unpaired surrogates or U+FFFE/U+FFFF',
  },
  'xml-text': {
    test: isXmlText,
    detail: 'must contain only characters XML 1.0 allows (no control characters other than tab, line feed and carriage return, no unpaired surrogates, no U+FFFE/U+FFFF)',
  },
} as const satisfies Record<string, { test: (s: string) => boolean; detail: string }>;

export type TextFormat = keyof typeof TEXT_FORMATS;

// TypeBox's compiler (http/validate.ts) looks formats up here; Fastify's ajv gets `ajvTextFormats`.
for (const [name, format] of Object.entries(TEXT_FORMATS)) FormatRegistry.Set(name, format.test);

/** The formats for Fastify's ajv (`ajv.customOptions.formats`). */
export const ajvTextFormats: Record<TextFormat, { type: 'string'; validate: (s: string) => boolean }> = Object.fromEntries(
  Object.entries(TEXT_FORMATS).map(([name, f]) => [name, { type: 'string', validate: f.test }]),
) as Record<TextFormat, { type: 'string'; validate: (s: string) => boolean }>;

/** What a failed text format means, for the `errors[].detail` of a validation problem; undefined for other formats. */
export function textFormatDetail(format: unknown): string | undefined {
  return typeof format === 'string' && Object.hasOwn(TEXT_FORMATS, format) ? TEXT_FORMATS[format as TextFormat].detail : undefined;
}

const text =
  (format: TextFormat) =>
  (options: StringOptions = {}): TString =>
    Type.String({ ...options, format });

/** Any string: only U+0000 and unpaired surrogates are refused (identifiers, URLs, passwords, XML payloads). */
export const anyText = text('text');
/** One line shown to people: no control characters. */
export const humanText = text('human-text');
/** Text shown to people that may hold tab, line feed and carriage return (a message body). */
export const multilineText = text('multiline-text');
/** A value that becomes part of an XML stanza (an attribute such as a message id). */
export const xmlText = text('xml-text');
