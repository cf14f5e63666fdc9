import { describe, expect, it } from 'vitest';
import { CODE_PATTERN, newCode, newNonce } from '../../src/quicklogin/codes.js';

describe('login codes and nonces from the pooled CSPRNG buffer', () => {
  it('are 22 base64url characters and never repeat, across several refills of the pool (256 tokens each)', () => {
    const drawn = Array.from({ length: 4 * 256 + 7 }, (_, i) => (i % 3 === 0 ? newNonce() : newCode()));
    for (const token of drawn) expect(token).toMatch(CODE_PATTERN);
    // A slot used twice (a refill skipped or an off-by-one) would repeat 128 random bits: never by chance.
    expect(new Set(drawn).size).toBe(drawn.length);
  });
});
