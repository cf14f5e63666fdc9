import type { Logger } from 'pino';
import { TokenService } from '../agent/tokens.js';
import type { Clock } from '../clock.js';
import type { Config } from '../config/schema.js';
import { loadServerSigner, type ServerSigner } from '../quicklogin/server-signer.js';
import type { Store } from '../store/stores.js';
import { intervals, type Lifecycle } from './area.js';

const TOKEN_KEY_RELOAD_MS = 60_000;

export interface KeysArea extends Lifecycle {
  /** Signs results and callbacks (server key ring in the store). */
  signer: ServerSigner;
  /** Agent API JWTs (their own key ring in the store). */
  tokens: TokenService;
}

/** The service's key rings, read from the store every node shares (docs/agent-api.md "Keys"). */
export async function createKeysArea(o: { config: Config; store: Store; clock: Clock; log: Logger }): Promise<KeysArea> {
  const signer = await loadServerSigner(o.store.serverKeys, o.clock);
  const tokens = await TokenService.load(o.store.serverKeys, o.clock, o.config.publicBaseUrl);
  // Picks up keys rotated by the CLI or another node, so the newest key signs everywhere (an unknown kid verifies at once anyway).
  const timers = intervals([() => tokens.reload().catch((err: unknown) => o.log.error({ err }, 'token key reload failed')), TOKEN_KEY_RELOAD_MS]);
  return { signer, tokens, start: () => timers.start(), stop: () => timers.stop() };
}
