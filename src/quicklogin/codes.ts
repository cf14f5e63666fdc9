import { randomFillSync } from 'node:crypto';

/** Bytes of randomness in a nonce (128 bits, base64url: 22 characters); a login code has 96 and a time prefix. */
const TOKEN_BYTES = 16;
/** Tokens drawn from the CSPRNG at once. */
const POOL_TOKENS = 256;

const pool = Buffer.alloc(TOKEN_BYTES * POOL_TOKENS);
let next = POOL_TOKENS;

/**
 * `bytes` (at most 16) random bytes as base64url, from a pool the CSPRNG refills 256 tokens at a time
 * (the way crypto.randomUUID caches its randomness): every QR request takes two, and one call into the
 * CSPRNG per token was about 2 µs each on the QR hot path (docs/benchmarks.md#login-codes). Each token's bytes are
 * used once and never again, so the pool changes nothing about what is random.
 */
function randomToken(bytes = TOKEN_BYTES): string {
  if (next === POOL_TOKENS) {
    randomFillSync(pool);
    next = 0;
  }
  const start = next++ * TOKEN_BYTES;
  return pool.toString('base64url', start, start + bytes);
}

/** The 64 base64url characters in ASCII order: a number written with them sorts as the number does. */
const SORTED_DIGITS = '-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz';
/** A code's time prefix: 6 characters, 36 bits of milliseconds (the count starts over every ~795 days). */
const TIME_CHARS = 6;
/** The random part: 96 bits, 16 base64url characters. */
const CODE_RANDOM_BYTES = 12;

/** A code's first TIME_CHARS characters: milliseconds modulo 2^36 (the count starts over every ~795 days). */
export function timePrefix(ms: number): string {
  let rest = Math.floor(ms) % 2 ** (6 * TIME_CHARS);
  let out = '';
  for (let i = 0; i < TIME_CHARS; i++) {
    out = SORTED_DIGITS[rest % 64]! + out;
    rest = Math.floor(rest / 64);
  }
  return out;
}

/** The milliseconds modulo 2^36 a code's time prefix says, or undefined when `code` has none. */
export function prefixTime(code: string): number | undefined {
  let value = 0;
  for (let i = 0; i < TIME_CHARS; i++) {
    const digit = SORTED_DIGITS.indexOf(code[i] ?? '');
    if (digit < 0) return undefined;
    value = value * 64 + digit;
  }
  return value;
}

/** The time prefix's period: 2^36 ms. */
export const PREFIX_PERIOD_MS = 2 ** (6 * TIME_CHARS);
/** Characters of the time prefix. */
export const TIME_PREFIX_CHARS = TIME_CHARS;

/**
 * A login code (docs/signing.md): 22 URL-safe characters, a 36-bit millisecond time prefix then 96 random
 * bits. Codes are stored keyed by the code, one per QR refresh of every waiting page: with a random key
 * each insert wrote into a random page of the key's index (about 6 KB of WAL per code, twice the insert's
 * CPU); codes issued in order go to the index's end (docs/benchmarks.md#login-codes). What makes a
 * code unguessable is the random part; the prefix only tells when it was issued, which its page shows anyway.
 */
export const newCode = (now: number): string => timePrefix(now) + randomToken(CODE_RANDOM_BYTES);

/** Server nonce included in the challenge. */
export const newNonce = (): string => randomToken();

/** Shape check before a code reaches the store. */
export const CODE_PATTERN = /^[A-Za-z0-9_-]{22}$/;
