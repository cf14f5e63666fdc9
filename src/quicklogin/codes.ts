import { randomFillSync } from 'node:crypto';

/** Bytes of randomness in a login code and in a nonce (128 bits each, base64url: 22 characters). */
const TOKEN_BYTES = 16;
/** Tokens drawn from the CSPRNG at once. */
const POOL_TOKENS = 256;

const pool = Buffer.alloc(TOKEN_BYTES * POOL_TOKENS);
let next = POOL_TOKENS;

/**
 * 128 random bits as base64url, from a pool the CSPRNG refills 256 tokens at a time (the way
 * crypto.randomUUID caches its randomness): every QR request takes two, and one call into the CSPRNG
 * per token was about 2 µs each on the QR hot path (docs/benchmarks.md). Each token's bytes are used
 * once and never again, so the pool changes nothing about what is random.
 */
function randomToken(): string {
  if (next === POOL_TOKENS) {
    randomFillSync(pool);
    next = 0;
  }
  const start = next++ * TOKEN_BYTES;
  return pool.toString('base64url', start, start + TOKEN_BYTES);
}

/** 128-bit random, URL-safe login code (docs/signing.md). */
export const newCode = (): string => randomToken();

/** Server nonce included in the challenge. */
export const newNonce = (): string => randomToken();

/** Shape check before a code reaches the store. */
export const CODE_PATTERN = /^[A-Za-z0-9_-]{22}$/;
