import { chmodSync, closeSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import type { KeyObject } from 'node:crypto';
import { privateKeyFromPem } from './keys.js';

const ID_LINE = 'tabwire-legal-id: ';

/**
 * A signer's key file: one line naming the identity, then the PKCS#8 PEM private key (RFC 7468 §2
 * lets text precede the encapsulation boundary, so OpenSSL tools still read it). Written 0600.
 */
export function writeKeyFile(path: string, legalId: string, privateKeyPem: string): void {
  const file = reserveKeyFile(path);
  file.write(legalId, privateKeyPem);
}

/** A key file created empty (0600) before the identity is stored, written once the identity exists. */
export interface ReservedKeyFile {
  write(legalId: string, privateKeyPem: string): void;
  /** Removes the empty file again (storing the identity failed). */
  discard(): void;
}

/**
 * Creates the key file empty, never overwriting one: an identity must not be stored whose private key
 * could then not be written anywhere. An existing file is refused with a message that says so.
 */
export function reserveKeyFile(path: string): ReservedKeyFile {
  let fd: number;
  try {
    fd = openSync(path, 'wx', 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') {
      throw new Error(`${path} exists already (it may hold another identity's key; it is never overwritten): choose another --key-out FILE; nothing was stored`);
    }
    throw new Error(`cannot create the key file ${path}: ${(error as Error).message}; nothing was stored`);
  }
  chmodSync(path, 0o600); // the umask cannot widen it
  return {
    write(legalId, privateKeyPem) {
      try {
        writeSync(fd, `${ID_LINE}${legalId}\n${privateKeyPem}`);
      } finally {
        closeSync(fd);
      }
    },
    discard() {
      closeSync(fd);
      unlinkSync(path);
    },
  };
}

export function readKeyFile(path: string): { legalId: string; key: KeyObject } {
  const text = readFileSync(path, 'utf8');
  const line = text.split('\n').find((l) => l.startsWith(ID_LINE));
  if (!line) throw new Error(`${path}: no "${ID_LINE.trim()}" line`);
  const pem = text.slice(text.indexOf('-----BEGIN'));
  return { legalId: line.slice(ID_LINE.length).trim(), key: privateKeyFromPem(pem) };
}
