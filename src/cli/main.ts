#!/usr/bin/env node
import { ConfigError } from '../config/load.js';
import { parseFlags, UsageError } from './args.js';
import { commandNamed, COMMANDS, type CliIo } from './commands.js';
import { CommandFailure, ExitStatus } from './failure.js';
import { commandHelp, globalHelp } from './help.js';
import { SignerError } from './signer.js';

/** `tabwire <command> …` (docs/cli.md): finds the command in the table, parses its flags, runs it. */
async function run(argv: string[], io: CliIo): Promise<string> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h') return globalHelp(COMMANDS);
  const command = commandNamed(name);
  if (!command) {
    throw new UsageError(name.startsWith('-') ? `${name} must follow a command` : `unknown command "${name}"; the commands are ${COMMANDS.map((c) => c.name).join(', ')}`);
  }
  const args = parseFlags(command.name, command.flags, rest);
  if (args.help) return commandHelp(command);
  return command.run(args, io);
}

/** The message and exit status for what a command threw. */
function failure(err: unknown, commandName: string | undefined): { text: string; status: number } {
  if (err instanceof UsageError) {
    const where = err.command ?? (commandName !== undefined && commandNamed(commandName) ? commandName : undefined);
    const help = where === undefined ? 'tabwire --help' : `tabwire ${where} --help`;
    return { text: `tabwire${where === undefined ? '' : ` ${where}`}: ${err.message}\n(see \`${help}\`)`, status: ExitStatus.usage };
  }
  if (err instanceof ConfigError) return { text: err.message, status: ExitStatus.usage };
  if (err instanceof SignerError) return { text: `refused${err.status ? ` (${err.status} ${err.code ?? ''})` : ''}: ${err.message}`, status: ExitStatus.failed };
  if (err instanceof CommandFailure) return { text: err.message, status: err.status };
  return { text: err instanceof Error ? err.message : String(err), status: ExitStatus.failed };
}

const argv = process.argv.slice(2);
const io: CliIo = { stdin: process.stdin, stdout: process.stdout, stderr: process.stderr, env: process.env };
run(argv, io).then(
  (text) => process.stdout.write(text),
  (err: unknown) => {
    const { text, status } = failure(err, argv[0]);
    process.stderr.write(`${text}\n`);
    process.exitCode = status;
  },
);
