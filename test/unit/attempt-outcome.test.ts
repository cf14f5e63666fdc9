import { describe, expect, it } from 'vitest';
import { backoffMs, failureReason, outcomeOfAnswer } from '../../src/callbacks/attempt-outcome.js';

const NOW = Date.parse('2026-11-26T12:00:00Z');

describe('what a callback attempt comes to', () => {
  it('any 2xx delivers, 410 ends the attempts, a redirect and other statuses are retried', () => {
    expect(outcomeOfAnswer(200, undefined, NOW)).toEqual({ kind: 'delivered' });
    expect(outcomeOfAnswer(204, '30', NOW)).toEqual({ kind: 'delivered' });
    expect(outcomeOfAnswer(410, '30', NOW)).toEqual({ kind: 'gone' });
    expect(outcomeOfAnswer(302, undefined, NOW)).toEqual({ kind: 'retry', reason: 'redirect_not_followed' });
    expect(outcomeOfAnswer(404, undefined, NOW)).toEqual({ kind: 'retry', reason: 'status_404' });
  });

  it('honours Retry-After in seconds or as an HTTP date, never in the past, and ignores what it cannot read', () => {
    expect(outcomeOfAnswer(503, ' 7 ', NOW)).toEqual({ kind: 'retry', reason: 'status_503', retryAfterMs: 7_000 });
    expect(outcomeOfAnswer(429, 'Thu, 26 Nov 2026 12:00:30 GMT', NOW)).toEqual({ kind: 'retry', reason: 'status_429', retryAfterMs: 30_000 });
    expect(outcomeOfAnswer(429, 'Thu, 26 Nov 2026 11:00:00 GMT', NOW)).toEqual({ kind: 'retry', reason: 'status_429', retryAfterMs: 0 });
    expect(outcomeOfAnswer(503, 'soon', NOW)).toEqual({ kind: 'retry', reason: 'status_503' });
  });

  it('backs off exponentially with jitter in [d/2, d], capped, in whole milliseconds', () => {
    for (let attempt = 1; attempt <= 12; attempt++) {
      const d = Math.min(60_000, 1_000 * 2 ** (attempt - 1));
      for (let i = 0; i < 50; i++) {
        const ms = backoffMs(attempt, 1_000, 60_000);
        expect(Number.isInteger(ms)).toBe(true);
        expect(ms).toBeGreaterThanOrEqual(d / 2);
        expect(ms).toBeLessThanOrEqual(d);
      }
    }
  });

  it('names why an attempt got no answer', () => {
    expect(failureReason(Object.assign(new Error('x'), { code: 'ECALLBACKADDRESS' }))).toBe('address_refused');
    expect(failureReason(Object.assign(new Error('x'), { cause: { code: 'ECONNREFUSED' } }))).toBe('connection_refused');
    expect(failureReason(Object.assign(new Error('x'), { name: 'TimeoutError' }))).toBe('timeout');
    expect(failureReason(Object.assign(new Error('x'), { code: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE' }))).toBe('tls');
    expect(failureReason(new Error('reset'))).toBe('network');
  });
});
