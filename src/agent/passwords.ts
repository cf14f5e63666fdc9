import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import { TabwireError } from '../errors.js';

/**
 * Password hashes with scrypt (node:crypto; RFC 7914), self-describing so the cost can rise later:
 * `scrypt$N$r$p$salt$hash` (base64url). N = 2^15, r = 8: ~32 MiB and tens of ms per check.
 */
const PARAMS = { N: 2 ** 15, r: 8, p: 1 } as const;
const KEY_LENGTH = 32;
const MAX_MEM = 64 * 1024 * 1024;

/**
 * An unpaired surrogate (U+D800-U+DFFF alone) has no UTF-8 form: scrypt would see U+FFFD in its place, so
 * "\ud800\ud800pw" and "\udfff\udfffpw" would be the same password. Such strings are refused, never hashed.
 */
const UNPAIRED_SURROGATE = /[\uD800-\uDFFF]/u;
export const wellFormedPassword = (password: string): boolean => !UNPAIRED_SURROGATE.test(password);

const derive = (password: string, salt: Buffer, o: ScryptOptions): Promise<Buffer> =>
  new Promise((resolve, reject) =>
    scrypt(password.normalize('NFC'), salt, KEY_LENGTH, { ...o, maxmem: MAX_MEM }, (err, key) => (err ? reject(err) : resolve(key))),
  );

export async function hashPassword(password: string): Promise<string> {
  if (!wellFormedPassword(password)) throw new TabwireError('validation_failed', 'The password contains an unpaired surrogate (U+D800-U+DFFF)');
  const salt = randomBytes(16);
  const key = await derive(password, salt, PARAMS);
  return ['scrypt', PARAMS.N, PARAMS.r, PARAMS.p, salt.toString('base64url'), key.toString('base64url')].join('$');
}

/** Constant-time check; false for any malformed hash, and for a password that could not have been hashed. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = stored.split('$');
  if (scheme !== 'scrypt' || !n || !r || !p || !salt || !hash || !wellFormedPassword(password)) return false;
  const expected = Buffer.from(hash, 'base64url');
  const actual = await derive(password, Buffer.from(salt, 'base64url'), { N: Number(n), r: Number(r), p: Number(p) });
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

/**
 * A hash of a random password, checked when the user name does not exist, so a wrong user name
 * costs the same time as a wrong password and the two cannot be told apart.
 */
export const DUMMY_HASH_PROMISE: Promise<string> = hashPassword(randomBytes(16).toString('hex'));
