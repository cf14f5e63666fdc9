import { createApiKey } from '../agent/api-keys.js';
import { rotateTokenKey, TokenService } from '../agent/tokens.js';
import { systemClock } from '../clock.js';
import { rotateCodeKey } from '../quicklogin/code-keys.js';
import type { Config } from '../config/schema.js';
import { openOperatorStore } from './operator-store.js';
import type { Store } from '../store/stores.js';
import { listOutput } from './list-output.js';

/** Runs `run` on the operator store (found as the service finds it), closed afterwards. */
export async function withStore<T>(config: Config, run: (store: Store) => Promise<T>): Promise<T> {
  const store = await openOperatorStore(config);
  try {
    return await run(store);
  } finally {
    await store.close();
  }
}

/** `tabwire apikey create [--note TEXT] | revoke <id> | list`. */
export const apiKeyCommand = (config: Config, action: string, arg: string | undefined, note: string | undefined) =>
  withStore(config, async ({ apiKeys }) => {
    switch (action) {
      case 'create': {
        const { id, key } = await createApiKey(apiKeys, systemClock, note ?? null);
        return `${id}\t${key}\n(the key is shown only now; send it as the X-Api-Key header)\n`;
      }
      case 'revoke':
        if (!arg) throw new Error('apikey revoke needs an id');
        if (!(await apiKeys.revoke(arg, systemClock.now()))) throw new Error(`no active API key ${arg}`);
        return `${arg}\trevoked\n`;
      case 'list':
        return listOutput(['ID', 'STATE', 'NOTE'], (await apiKeys.list()).map((k) => [k.id, k.revokedAt === null ? 'active' : 'revoked', k.note ?? '']));
      default:
        throw new Error(`unknown apikey action "${action}"`);
    }
  });

/** `tabwire account list | disable <user> | enable <user> | delete <user>`. */
export const accountCommand = (config: Config, action: string, userName: string | undefined) =>
  withStore(config, async ({ accounts }) => {
    if (action === 'list') return listOutput(['USER', 'STATE', 'EMAIL'], (await accounts.list()).map((a) => [a.userName, a.state, a.email ?? '']));
    if (!userName) throw new Error(`account ${action} needs a user name`);
    const account = await accounts.byUserName(userName);
    if (!account) throw new Error(`no account ${userName}`);
    switch (action) {
      case 'disable':
      case 'enable':
        await accounts.setState(account.id, action === 'disable' ? 'disabled' : 'active');
        return `${userName}\t${action}d\n`;
      case 'delete':
        await accounts.delete(account.id);
        return `${userName}\tdeleted (its tokens stop working at once)\n`;
      default:
        throw new Error(`unknown account action "${action}"`);
    }
  });

/** `tabwire token --user U --seconds N`: a token for development. */
export const tokenCommand = (config: Config, userName: string, seconds: number) =>
  withStore(config, async (store) => {
    const account = await store.accounts.byUserName(userName);
    if (!account) throw new Error(`no account ${userName}`);
    const tokens = await TokenService.load(store.serverKeys, systemClock, config.publicBaseUrl);
    const { jwt, expires } = await tokens.issue(account, seconds);
    return `${jwt}\n(expires ${new Date(expires * 1000).toISOString()})\n`;
  });

/** `tabwire keys rotate`: a new token signing key; running services pick it up within a minute. */
export const keysCommand = (config: Config, action: string) =>
  withStore(config, async (store) => {
    if (action === 'rotate-codes') return `${await rotateCodeKey(store.serverKeys, systemClock)}\tnew login code key (codes of older keys stay valid until they expire)\n`;
    if (action !== 'rotate') throw new Error(`unknown keys action "${action}"`);
    return `${await rotateTokenKey(store.serverKeys, systemClock)}\tnew signing key (older keys keep verifying)\n`;
  });
