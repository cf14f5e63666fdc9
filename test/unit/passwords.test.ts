import { describe, expect, it } from 'vitest';
import { hashPassword, verifyPassword } from '../../src/agent/passwords.js';

describe('passwords with unpaired surrogates', () => {
  it('"\\ud800"×8+"pw" and "\\udfff"×8+"pw" hashed alike (UTF-8 turned both into U+FFFD)', async () => {
    // What an ill-formed password used to be hashed as.
    const stored = await hashPassword(`${'\ufffd'.repeat(8)}pw`);
    expect(await verifyPassword(`${'\udfff'.repeat(8)}pw`, stored)).toBe(false);
    expect(await verifyPassword(`${'\ufffd'.repeat(8)}pw`, stored)).toBe(true);
    await expect(hashPassword(`${'\ud800'.repeat(8)}pw`)).rejects.toMatchObject({ code: 'validation_failed' });
  });
});
