import type { Logger } from 'pino';
import { TokenService } from '../agent/tokens.js';
import type { Clock } from '../clock.js';
import type { Config } from '../config/schema.js';
import { bearerGuard } from '../http/bearer.js';
import { CODE_KEY_RELOAD_MS, CodeKeyRing } from '../quicklogin/code-keys.js';
import { loadServerSigner, type ServerSigner } from '../quicklogin/server-signer.js';
import type { Store } from '../store/stores.js';
import { intervals, type Lifecycle } from './area.js';

const TOKEN_KEY_RELOAD_MS = 60_000;

export interface KeysArea extends Lifecycle {
  /** Signs results and callbacks (server key ring in the store). */
  signer: ServerSigner;
  /** Agent API JWTs (their own key ring in the store). */
  tokens: TokenService;
  /** The keys login codes are derived under (docs/signing.md "Derived codes"). */
  codeKeys: CodeKeyRing;
  /** The Agent API's `Authorization: Bearer` check, for the route modules that need a token (RFC 6750). */
  guard: ReturnType<typeof bearerGuard>;
}

export interface KeysAreaDeps {
  store: Store;
  clock: Clock;
  log: Logger;
}

/** The service's key rings, read from the store every node shares (docs/agent-api.md "Keys"). */
export async function createKeysArea(config: Config, { store, clock, log }: KeysAreaDeps): Promise<KeysArea> {
  const signer = await loadServerSigner(store.serverKeys, clock);
  const tokens = await TokenService.load(store.serverKeys, clock, config.publicBaseUrl);
  // Picks up keys rotated by the CLI or another node, so the newest key signs everywhere (an unknown kid verifies at once anyway).
  const codeKeys = await CodeKeyRing.load(store.serverKeys, clock);
  const timers = intervals(
    [() => tokens.reload().catch((err: unknown) => log.error({ err }, 'token key reload failed')), TOKEN_KEY_RELOAD_MS],
    // A rotated code key derives new requests' codes once read; a code under it is checked at once anyway (an unknown kid reads the ring).
    [() => codeKeys.reload().catch((err: unknown) => log.error({ err }, 'code key reload failed')), CODE_KEY_RELOAD_MS],
  );
  return { signer, tokens, codeKeys, guard: bearerGuard(tokens, store.accounts), start: () => timers.start(), stop: () => timers.stop() };
}
