import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { CODE_PATTERN, PREFIX_PERIOD_MS } from '../../src/quicklogin/codes.js';
import { deriveCode, FUTURE_SKEW_MS, macMatches, parseDerivedCode } from '../../src/quicklogin/derived-code.js';

// The derived code's layout (src/quicklogin/derived-code.ts): what goes in comes out, under the MAC.

const secret = randomBytes(32);
const digest = randomBytes(32);
const NOW = 1_700_000_000_000;

describe('derived codes', () => {
  it('round-trips issue time, salt and request id at their extremes; the MAC matches only its key and request', () => {
    for (const [salt, id] of [[0, 0], [4095, 2 ** 36 - 1], [17, 123_456_789]] as const) {
      const code = deriveCode(secret, digest, id, NOW, salt);
      expect(code).toMatch(CODE_PATTERN);
      const parts = parseDerivedCode(code, NOW)!;
      expect(parts).toMatchObject({ issuedAt: NOW, salt, requestId: id });
      expect(macMatches(secret, digest, parts)).toBe(true);
      expect(macMatches(randomBytes(32), digest, parts)).toBe(false);
      expect(macMatches(secret, randomBytes(32), parts)).toBe(false);
    }
  });

  it('places the 36-bit time in the period that ends a minute after now: a code from one period ago does not match', () => {
    const code = deriveCode(secret, digest, 5, NOW, 1);
    expect(parseDerivedCode(code, NOW - FUTURE_SKEW_MS)!.issuedAt).toBe(NOW);
    expect(parseDerivedCode(code, NOW - FUTURE_SKEW_MS - 1)!.issuedAt).toBe(NOW - PREFIX_PERIOD_MS);
    const later = parseDerivedCode(code, NOW + PREFIX_PERIOD_MS)!;
    expect(later.issuedAt).toBe(NOW + PREFIX_PERIOD_MS);
    expect(macMatches(secret, digest, later)).toBe(false);
  });

  it('is not a derived code: wrong length, characters outside the alphabet', () => {
    expect(parseDerivedCode('A'.repeat(21), NOW)).toBeUndefined();
    expect(parseDerivedCode('A'.repeat(23), NOW)).toBeUndefined();
    expect(parseDerivedCode('!'.repeat(22), NOW)).toBeUndefined();
  });
});
