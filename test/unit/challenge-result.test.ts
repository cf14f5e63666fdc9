import { describe, expect, it } from 'vitest';
import { buildChallenge, signedMessage } from '../../src/quicklogin/challenge.js';
import { parseFilter } from '../../src/quicklogin/result.js';

describe('challenge', () => {
  it('is the documented line format; free text cannot add lines', () => {
    const challenge = buildChallenge({
      code: 'c0de',
      purpose: 'Log in\norigin:https://evil.example',
      origin: 'https://shop.example',
      service: 'auth.example.org',
      expires: 1_800_000_000,
      nonce: 'n0nce',
    });
    expect(challenge.split('\n')).toEqual([
      'tabwire-quicklogin-v1',
      'code:c0de',
      'purpose:"Log in\\norigin:https://evil.example"',
      'origin:https://shop.example',
      'service:auth.example.org',
      'expires:1800000000',
      'nonce:n0nce',
    ]);
    expect(signedMessage(challenge, 'id@x', 'approve').toString().split('\n').slice(-2)).toEqual(['legalId:id@x', 'decision:approve']);
  });
});

describe('filters', () => {
  it('are comma-separated names, trimmed; blank means no filter', () => {
    expect(parseFilter('PNR, COUNTRY')).toEqual(new Set(['PNR', 'COUNTRY']));
    expect(parseFilter(' , ')).toBeUndefined();
    expect(parseFilter(null)).toBeUndefined();
  });
});
