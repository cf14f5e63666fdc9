/**
 * The wallet's Ed25519 key (RFC 8032, WebCrypto "Ed25519"): made in the browser, non-extractable, kept
 * in IndexedDB. Only its public half ever leaves (raw 32 bytes, base64, as ApplyId expects).
 */
import { load, save } from './db.js';
import { toBase64, utf8 } from './encoding.js';

const KEY = 'key';

export interface WalletKey {
  pair: CryptoKeyPair;
  /** Raw public key, base64. */
  publicKey: string;
}

async function describe(pair: CryptoKeyPair): Promise<WalletKey> {
  // A public key is always exportable; the private key was made with extractable=false.
  const raw = new Uint8Array(await crypto.subtle.exportKey('raw', pair.publicKey));
  return { pair, publicKey: toBase64(raw) };
}

export async function loadKey(): Promise<WalletKey | undefined> {
  const pair = await load<CryptoKeyPair>(KEY);
  return pair ? describe(pair) : undefined;
}

/** Makes and stores a new key pair. Throws when the browser has no Ed25519 (or no secure context). */
export async function createKey(): Promise<WalletKey> {
  if (!globalThis.isSecureContext || !crypto.subtle) {
    throw new Error('This page is not a secure context (https or localhost), so the browser offers no WebCrypto: open the wallet over https.');
  }
  const pair = (await crypto.subtle.generateKey({ name: 'Ed25519' }, false, ['sign', 'verify'])) as CryptoKeyPair;
  await save(KEY, pair);
  return describe(pair);
}

/** An Ed25519 signature over the UTF-8 of text, base64 (64 bytes). */
export async function signText(key: WalletKey, text: string): Promise<string> {
  const signature = await crypto.subtle.sign({ name: 'Ed25519' }, key.pair.privateKey, utf8(text));
  return toBase64(new Uint8Array(signature));
}
