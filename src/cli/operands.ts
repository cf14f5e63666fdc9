import { UsageError, type ParsedArgs } from './args.js';

/**
 * The words after a command (its action, and the action's operands), checked so that a missing or stray word
 * is a usage error naming the command rather than something silently ignored (docs/cli.md "Help and usage").
 */

/** The action word at position `at` (`oidc client <action>`: 1), checked against the allowed ones. */
export function action(command: string, args: ParsedArgs, allowed: readonly string[], at = 0): string {
  const what = [command, ...args.positionals.slice(0, at)].join(' ');
  const word = args.positionals[at];
  if (word === undefined) throw new UsageError(`${what} needs an action: ${allowed.join(', ')}`, command);
  if (!allowed.includes(word)) throw new UsageError(`unknown ${what} action "${word}"; expected one of ${allowed.join(', ')}`, command);
  return word;
}

/** The positional operands after the action: exactly `names`, so a stray word is an error rather than ignored. */
export function operands(command: string, args: ParsedArgs, names: readonly string[], from = 1): string[] {
  const given = args.positionals.slice(from);
  const what = [command, ...args.positionals.slice(0, from)].join(' ');
  if (given.length < names.length) throw new UsageError(`${what} needs ${names.map((n) => `<${n}>`).join(' ')}`, command);
  if (given.length > names.length) throw new UsageError(`${what}: unexpected argument "${given[names.length]}"`, command);
  return given;
}

/** Whether the flag `name` was given (a boolean switched on, a value, a repeated value). */
export const given = (args: ParsedArgs, name: string): boolean =>
  args.booleans[name] === true || args.strings[name] !== undefined || (args.lists[name]?.length ?? 0) > 0 || args.integers[name] !== undefined;

/** Flags that only one action takes: given with another action they are a mistake, not silently ignored. */
export function onlyWith(command: string, args: ParsedArgs, act: string, owner: string, names: readonly string[]): void {
  if (act === owner) return;
  for (const name of names) {
    if (given(args, name)) throw new UsageError(`--${name} applies only to ${command} ${owner}`, command);
  }
}
