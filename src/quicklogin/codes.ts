import { randomBytes } from 'node:crypto';

/** 128-bit random, URL-safe login code (ARCHITECTURE.md §2). */
export const newCode = (): string => randomBytes(16).toString('base64url');

/** Server nonce included in the challenge. */
export const newNonce = (): string => randomBytes(16).toString('base64url');

/** Shape check before a code reaches the store. */
export const CODE_PATTERN = /^[A-Za-z0-9_-]{22}$/;
