import { describe, expect, it } from 'vitest';
import { TEXT_FORMATS } from '../../src/http/schema-text.js';

const accepts = (format: keyof typeof TEXT_FORMATS, text: string) => TEXT_FORMATS[format].test(text);

describe('the one rule for free text', () => {
  const everywhere = ['', 'Ada Lovelace', 'Grüße', '\u{1F600} emoji (a surrogate pair)', '漢字', '\u00A0nbsp', '\uFFFD'];

  it('every format accepts ordinary text, including characters outside the BMP', () => {
    for (const format of Object.keys(TEXT_FORMATS) as (keyof typeof TEXT_FORMATS)[]) {
      for (const text of everywhere) expect(accepts(format, text), `${format} ${JSON.stringify(text)}`).toBe(true);
    }
  });

  it('no format accepts an unpaired surrogate, at either end or reversed', () => {
    for (const format of Object.keys(TEXT_FORMATS) as (keyof typeof TEXT_FORMATS)[]) {
      for (const text of ['\ud800', 'a\udbff', '\udc00b', '\ude00\ud83d']) expect(accepts(format, text), `${format} ${JSON.stringify(text)}`).toBe(false);
    }
  });

  it.each([
    // [text, text, human-text, multiline-text, xml-text]
    // U+0000: PostgreSQL text cannot hold it, so even any-text refuses it (docs/input.md).
    ['\u0000', false, false, false, false],
    ['\b', true, false, false, false],
    ['\t', true, false, true, true],
    ['\n', true, false, true, true],
    ['\r', true, false, true, true],
    ['\u001f', true, false, false, false],
    ['\u007f', true, false, false, true],
    ['\u0085', true, false, false, true],
    ['\u009f', true, false, false, true],
    ['\ufffe', true, false, false, false],
    ['\uffff', true, false, false, false],
  ])('%j: text %s, human-text %s, multiline-text %s, xml-text %s', (char, text, human, multiline, xml) => {
    expect(accepts('text', `a${char}b`)).toBe(text);
    expect(accepts('human-text', `a${char}b`)).toBe(human);
    expect(accepts('multiline-text', `a${char}b`)).toBe(multiline);
    expect(accepts('xml-text', `a${char}b`)).toBe(xml);
  });
});
