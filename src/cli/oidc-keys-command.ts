import { systemClock, type Clock } from '../clock.js';
import type { Config } from '../config/schema.js';
import { ID_TOKEN_ALGS, OIDC_KEY_RELOAD_MS, PUBLISH_AHEAD_MS, rotateOidcKeys } from '../oidc/signing-keys.js';
import type { ServerKeyStore } from '../store/stores.js';
import { withStore } from './operator-commands.js';

/** `tabwire oidc keys rotate` (docs/cli.md "oidc"): a new key in each OpenID Provider key ring (docs/oidc.md "Keys"). */

/** Adds the keys and says what happens next: published at once, signing only after the publish-ahead. */
export async function rotateAndDescribe(keys: ServerKeyStore, clock: Clock): Promise<string> {
  // One instant for both keys and the printed time, so what it prints is exactly when they sign.
  const now = clock.now();
  const made = await rotateOidcKeys(keys, { now: () => now });
  const signsAt = new Date(now + PUBLISH_AHEAD_MS).toISOString();
  const rows = ID_TOKEN_ALGS.map((alg) => `${alg}\t${made[alg]}\n`).join('');
  return (
    rows +
    `(new ID token signing keys: every node publishes them in its JWKS within ${OIDC_KEY_RELOAD_MS / 60_000} minute; ` +
    `they sign from ${signsAt}, ${PUBLISH_AHEAD_MS / 60_000} minutes from now, on each node at its next key reload after that. ` +
    'The replaced keys stay published until the ID tokens they signed have expired.)\n'
  );
}

export const oidcKeysRotate = (config: Config): Promise<string> => withStore(config, ({ serverKeys }) => rotateAndDescribe(serverKeys, systemClock));
