import type { DevIdentity } from '../identity/dev-identity.js';
import { signEd25519 } from '../identity/keys.js';
import { signedMessage, type Decision } from './challenge.js';
import type { QuickLogin } from './quicklogin.js';

/**
 * Same-device approval with the development identity: signs the code's challenge with the dev key
 * and goes through the ordinary signature path, so every check (expiry, single use, signature) holds.
 */
export async function approveWithDevIdentity(quickLogin: QuickLogin, dev: DevIdentity, code: string, decision: Decision, binding?: string) {
  // Reads without binding: the approval page fetched (and bound) the code itself, and presents its token
  // here, so a scan-limited code is signed only by the page that fetched it first (docs/relay.md).
  const info = await quickLogin.peek(code);
  const signature = signEd25519(dev.key, signedMessage(info.challenge, dev.legalId, decision));
  return quickLogin.sign(code, { legalId: dev.legalId, signature, decision }, binding);
}
