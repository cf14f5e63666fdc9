#!/usr/bin/env node
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from '../config/load.js';
import { identityCommand } from './identity-command.js';
import { accountCommand, apiKeyCommand, keysCommand, tokenCommand } from './operator-commands.js';
import { signCommand } from './sign-command.js';
import { SignerError } from './signer.js';

const USAGE = `usage:
  tabwire serve
  tabwire identity create --prop NAME=VALUE [--prop ...] --key-out FILE [--valid-days N] [--approve]
  tabwire identity approve|reject|obsolete|compromised <id>
  tabwire identity list
  tabwire sign <signUrl> --key FILE [--yes] [--reject]
  tabwire apikey create [--note TEXT] | revoke <id> | list
  tabwire account list | disable <user> | enable <user> | delete <user>
  tabwire token --user USER [--seconds N]
  tabwire keys rotate
Configuration comes from TABWIRE_* variables and TABWIRE_CONFIG_FILE, as for the service.`;

async function run(argv: string[]): Promise<string> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      prop: { type: 'string', multiple: true, default: [] },
      'key-out': { type: 'string' },
      'valid-days': { type: 'string', default: '365' },
      approve: { type: 'boolean', default: false },
      key: { type: 'string' },
      yes: { type: 'boolean', default: false },
      reject: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
      note: { type: 'string' },
      user: { type: 'string' },
      seconds: { type: 'string', default: '3600' },
    },
  });
  const [command, ...rest] = positionals;
  if (values.help || command === undefined) return `${USAGE}\n`;
  switch (command) {
    case 'serve':
      await import('../main.js');
      return '';
    case 'identity': {
      const validDays = Number(values['valid-days']);
      if (!Number.isInteger(validDays) || validDays < 1) throw new UsageError('--valid-days must be a positive integer');
      return identityCommand(loadConfig(), {
        action: rest[0] ?? '',
        ...(rest[1] === undefined ? {} : { id: rest[1] }),
        props: values.prop ?? [],
        ...(values['key-out'] === undefined ? {} : { keyOut: values['key-out'] }),
        validDays,
        approve: values.approve ?? false,
      });
    }
    case 'sign': {
      if (rest[0] === undefined || values.key === undefined) throw new UsageError('sign needs <signUrl> and --key FILE');
      return signCommand(
        { signUrl: rest[0], keyFile: values.key, yes: values.yes ?? false, reject: values.reject ?? false },
        { input: process.stdin, output: process.stdout },
      );
    }
    case 'apikey':
      return apiKeyCommand(loadConfig(), rest[0] ?? '', rest[1], values.note);
    case 'account':
      return accountCommand(loadConfig(), rest[0] ?? '', rest[1]);
    case 'token': {
      const seconds = Number(values.seconds);
      if (values.user === undefined || !Number.isFinite(seconds)) throw new UsageError('token needs --user USER and a numeric --seconds');
      return tokenCommand(loadConfig(), values.user, seconds);
    }
    case 'keys':
      return keysCommand(loadConfig(), rest[0] ?? '');
    default:
      throw new UsageError(`unknown command "${command}"`);
  }
}

class UsageError extends Error {}

run(process.argv.slice(2)).then(
  (text) => process.stdout.write(text),
  (err: unknown) => {
    if (err instanceof UsageError) process.stderr.write(`${err.message}\n${USAGE}\n`);
    else if (err instanceof ConfigError) process.stderr.write(`${err.message}\n`);
    else if (err instanceof SignerError) process.stderr.write(`refused${err.status ? ` (${err.status} ${err.code ?? ''})` : ''}: ${err.message}\n`);
    else process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  },
);
