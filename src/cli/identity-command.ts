import { systemClock } from '../clock.js';
import type { Config } from '../config/schema.js';
import { createIdentity } from '../identity/create.js';
import { canTransition } from '../identity/identity.js';
import type { Identity, IdentityState } from '../store/stores.js';
import { reserveKeyFile } from '../identity/key-file.js';
import { openOperatorStore } from './operator-store.js';
import { listOutput } from './list-output.js';

const OPERATOR_MOVES: Record<string, IdentityState> = {
  approve: 'Approved',
  reject: 'Rejected',
  obsolete: 'Obsoleted',
  compromised: 'Compromised',
};

export interface IdentityArgs {
  action: string;
  id?: string;
  props: string[];
  keyOut?: string;
  validDays: number;
  approve: boolean;
}

/** `tabwire identity create|approve|reject|obsolete|compromised|list`. Returns the text to print. */
export async function identityCommand(config: Config, args: IdentityArgs): Promise<string> {
  const store = await openOperatorStore(config);
  try {
    const { identities } = store;
    if (args.action === 'create') {
      if (!args.keyOut) throw new Error('identity create needs --key-out FILE for the private key');
      const properties: Record<string, string> = {};
      for (const prop of args.props) {
        const at = prop.indexOf('=');
        if (at <= 0) throw new Error(`--prop ${prop}: expected NAME=VALUE`);
        properties[prop.slice(0, at)] = prop.slice(at + 1);
      }
      // The key file first: an identity is stored only once its private key has somewhere to go.
      const keyFile = reserveKeyFile(args.keyOut);
      let created;
      try {
        created = await createIdentity({ identities, clock: systemClock, provider: config.legalDomain, properties, validDays: args.validDays });
      } catch (error) {
        keyFile.discard();
        throw error;
      }
      const { identity, privateKeyPem } = created;
      keyFile.write(identity.id, privateKeyPem);
      if (args.approve) await identities.transition(identity.id, 'Created', 'Approved', systemClock.now());
      return `${identity.id}\n`;
    }
    if (args.action === 'list') {
      // KEY says whether the identity's key may sign: `refused:<why>` marks a key that proves nothing (docs/signing.md).
      const key = (i: Identity): string => (i.keyProblem ? `refused:${i.keyProblem}` : 'ok');
      return listOutput(['ID', 'STATE', 'KEY', 'PROPERTIES'], (await identities.list()).map((i) => [i.id, i.state, key(i), JSON.stringify(i.properties)]));
    }
    const target = OPERATOR_MOVES[args.action];
    if (!target) throw new Error(`unknown identity action "${args.action}"`);
    if (!args.id) throw new Error(`identity ${args.action} needs an identity id`);
    const identity = await identities.get(args.id);
    if (!identity) throw new Error(`no identity ${args.id}`);
    if (!canTransition(identity.state, target)) throw new Error(`identity ${args.id} is ${identity.state}; it cannot become ${target}`);
    if (!(await identities.transition(identity.id, identity.state, target, systemClock.now()))) {
      throw new Error(`identity ${args.id} changed meanwhile; try again`);
    }
    return `${identity.id}\t${target}\n`;
  } finally {
    await store.close();
  }
}
