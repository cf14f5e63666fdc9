import { systemClock } from '../clock.js';
import type { Config } from '../config/schema.js';
import { ClientRuleError, clientRegistration, clientType, newClient, newClientId, type ClientRequest } from '../oidc/clients.js';
import type { OidcClient, OidcClientStore } from '../store/oidc-store.js';
import { UsageError } from './args.js';
import { listOutput } from './list-output.js';
import { withStore } from './operator-commands.js';
import { printable } from './printable.js';

/** `tabwire oidc client add|list|remove` (docs/cli.md "oidc"): commands.ts parses, oidc/clients.ts holds the rules. */

/** A fresh id that collides with a stored one (2^-128 per pair) is drawn again; more than this is a broken store. */
const ID_ATTEMPTS = 3;

/** The client the request describes; a broken rule is a usage error (exit status 2) naming the value. */
export function clientFor(request: ClientRequest, now: number): OidcClient {
  try {
    return newClient(request, now);
  } catch (error) {
    throw error instanceof ClientRuleError ? new UsageError(error.message, 'oidc') : error;
  }
}

/** Stores `client`, under a fresh id should its id be taken; returns the client as stored. */
export async function storeClient(clients: OidcClientStore, client: OidcClient): Promise<OidcClient> {
  for (let attempt = 1; !(await clients.insert(client)); attempt++) {
    if (attempt === ID_ATTEMPTS) throw new Error(`could not store the client: ${ID_ATTEMPTS} fresh client ids were all taken`);
    client = { ...client, clientId: newClientId() };
  }
  return client;
}

/** One line per client, never its secret. */
export async function listClients(clients: OidcClientStore): Promise<string> {
  const rows = (await clients.list()).map((c) => [c.clientId, printable(c.name ?? ''), clientType(c), c.redirectUris.join(' ')]);
  return listOutput(['CLIENT ID', 'NAME', 'TYPE', 'REDIRECT URIS'], rows);
}

export async function removeClient(clients: OidcClientStore, clientId: string): Promise<string> {
  if (!(await clients.remove(clientId))) throw new Error(`no client ${printable(clientId)}`);
  return `${clientId}\tremoved (it can no longer log anyone in)\n`;
}

/** `oidc client add`: the rules are checked before the store is opened, so a refused client touches no store. */
export async function oidcClientAdd(config: Config, request: ClientRequest): Promise<string> {
  const client = clientFor(request, systemClock.now());
  const stored = await withStore(config, ({ oidcClients }) => storeClient(oidcClients, client));
  return `${JSON.stringify(clientRegistration(stored), null, 2)}\n`;
}

export const oidcClientList = (config: Config): Promise<string> => withStore(config, ({ oidcClients }) => listClients(oidcClients));

export const oidcClientRemove = (config: Config, clientId: string): Promise<string> =>
  withStore(config, ({ oidcClients }) => removeClient(oidcClients, clientId));
