import { describe, expect, it } from 'vitest';
import { CODE_PATTERN, newCode, newNonce } from '../../src/quicklogin/codes.js';

describe('login codes and nonces from the pooled CSPRNG buffer', () => {
  it('are 22 base64url characters and never repeat, across several refills of the pool (256 tokens each)', () => {
    // All codes of one millisecond: only their random part tells them apart.
    const drawn = Array.from({ length: 4 * 256 + 7 }, (_, i) => (i % 3 === 0 ? newNonce() : newCode(1_800_000_000_000)));
    for (const token of drawn) expect(token).toMatch(CODE_PATTERN);
    // A slot used twice (a refill skipped or an off-by-one) would repeat 96 random bits: never by chance.
    expect(new Set(drawn).size).toBe(drawn.length);
    expect(new Set(drawn.map((t) => t.slice(6))).size).toBe(drawn.length);
  });

  it('codes sort by the time they were issued, so each insert goes to the end of the code index', () => {
    const times = [0, 1, 63, 64, 4_095, 4_096, 1_800_000_000_000, 1_800_000_000_001, 1_800_000_065_536, 2 ** 36 - 1];
    const codes = times.map((t) => newCode(t));
    expect([...codes].sort()).toEqual(codes); // plain code-unit order, as SQLite's BINARY collation compares
    expect(codes[0]!.slice(0, 6)).toBe('------');
    expect(newCode(2 ** 36).slice(0, 6)).toBe('------'); // the count starts over after 2^36 ms (~795 days)
    // Different random parts within one millisecond, the same prefix.
    const [a, b] = [newCode(5), newCode(5)];
    expect(a.slice(0, 6)).toBe(b.slice(0, 6));
    expect(a).not.toBe(b);
  });
});
