import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import type { KeyObject } from 'node:crypto';
import { privateKeyFromPem } from './keys.js';

const ID_LINE = 'tabwire-legal-id: ';

/**
 * A signer's key file: one line naming the identity, then the PKCS#8 PEM private key (RFC 7468 §2
 * lets text precede the encapsulation boundary, so OpenSSL tools still read it). Written 0600.
 */
export function writeKeyFile(path: string, legalId: string, privateKeyPem: string): void {
  writeFileSync(path, `${ID_LINE}${legalId}\n${privateKeyPem}`, { mode: 0o600, flag: 'wx' });
  chmodSync(path, 0o600); // the umask cannot widen it
}

export function readKeyFile(path: string): { legalId: string; key: KeyObject } {
  const text = readFileSync(path, 'utf8');
  const line = text.split('\n').find((l) => l.startsWith(ID_LINE));
  if (!line) throw new Error(`${path}: no "${ID_LINE.trim()}" line`);
  const pem = text.slice(text.indexOf('-----BEGIN'));
  return { legalId: line.slice(ID_LINE.length).trim(), key: privateKeyFromPem(pem) };
}
