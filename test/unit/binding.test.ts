import { describe, expect, it } from 'vitest';
import { bindingMatches, effectiveScanSeconds, hashBinding, newBindingToken } from '../../src/quicklogin/binding.js';

// Binding tokens and scan limits of codes that cannot be relayed (docs/relay.md).

describe('binding tokens', () => {
  it('are 128-bit base64url, different each time, and stored as a SHA-256 hex that does not contain them', () => {
    const a = newBindingToken();
    const b = newBindingToken();
    expect(a).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(a).not.toBe(b);
    expect(hashBinding(a)).toMatch(/^[0-9a-f]{64}$/);
    expect(hashBinding(a)).not.toContain(a);
  });

  it('match only the token whose hash is stored; never an absent token, an unbound code or a malformed header', () => {
    const token = newBindingToken();
    const stored = hashBinding(token);
    expect(bindingMatches(token, stored)).toBe(true);
    expect(bindingMatches(newBindingToken(), stored)).toBe(false);
    expect(bindingMatches(undefined, stored)).toBe(false);
    expect(bindingMatches(token, null)).toBe(false);
    expect(bindingMatches(`${token} `, stored)).toBe(false);
    // A stored value of another length (a corrupted row) is a mismatch, not a throw from timingSafeEqual.
    expect(bindingMatches(token, 'abcd')).toBe(false);
  });
});

describe('effectiveScanSeconds', () => {
  it('is the smaller of the deployment limit and the request, and none when neither sets one', () => {
    expect(effectiveScanSeconds(0, undefined)).toBeNull();
    expect(effectiveScanSeconds(5, undefined)).toBe(5);
    expect(effectiveScanSeconds(0, 7)).toBe(7);
    expect(effectiveScanSeconds(5, 3)).toBe(3);
    // A request cannot loosen the deployment's limit.
    expect(effectiveScanSeconds(5, 60)).toBe(5);
  });
});
