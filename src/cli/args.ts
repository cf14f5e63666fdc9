/**
 * Command-line flags, declared once per command (commands.ts) and used for both parsing and help, so a
 * flag cannot be accepted without being explained. Usage errors name the flag and the command.
 */

/** A mistake in how the command was called: printed with a pointer to the command's help, exit status 2. */
export class UsageError extends Error {
  override name = 'UsageError';
  constructor(
    message: string,
    /** The command whose help explains the fix; undefined for the top level. */
    readonly command?: string,
  ) {
    super(message);
  }
}

interface FlagBase {
  /** Without the leading dashes: `key-out`. */
  name: string;
  /** One or two sentences for the help text. */
  help: string;
}

/** `--name` alone switches it on. */
export interface BooleanFlag extends FlagBase {
  kind: 'boolean';
}

/** `--name VALUE` or `--name=VALUE`; `multiple` flags may be repeated and collect every value. */
export interface StringFlag extends FlagBase {
  kind: 'string';
  /** The placeholder shown in help: `FILE`, `URL`. */
  value: string;
  multiple?: boolean;
  default?: string;
  /** The allowed values, when the value is one of a few words. */
  choices?: readonly string[];
}

/** A whole number within bounds. */
export interface IntegerFlag extends FlagBase {
  kind: 'integer';
  value: string;
  min: number;
  max: number;
  default?: number;
}

export type Flag = BooleanFlag | StringFlag | IntegerFlag;

/** What a command receives: positional words and flag values (absent flags hold their default). */
export interface ParsedArgs {
  positionals: string[];
  booleans: Record<string, boolean>;
  strings: Record<string, string | undefined>;
  lists: Record<string, string[]>;
  integers: Record<string, number | undefined>;
  help: boolean;
}

/** Every command takes `--help` (also `-h`); commands.ts need not declare it. */
export const HELP_FLAG: BooleanFlag = { kind: 'boolean', name: 'help', help: 'Show this help and exit.' };

function takeValue(flag: StringFlag | IntegerFlag, inline: string | undefined, argv: string[], i: number, command: string): { value: string; next: number } {
  if (inline !== undefined) return { value: inline, next: i };
  const value = argv[i + 1];
  // A following flag is not a value: `--key --yes` is a forgotten FILE, not a file named "--yes".
  if (value === undefined || (value.startsWith('--') && value.length > 2)) {
    throw new UsageError(`--${flag.name} needs a value (${flag.value})`, command);
  }
  return { value, next: i + 1 };
}

/** Parses `argv` (after the command name) against `flags`; throws UsageError naming the flag at fault. */
export function parseFlags(command: string, flags: readonly Flag[], argv: string[]): ParsedArgs {
  const parsed: ParsedArgs = { positionals: [], booleans: {}, strings: {}, lists: {}, integers: {}, help: false };
  for (const flag of flags) {
    if (flag.kind === 'boolean') parsed.booleans[flag.name] = false;
    else if (flag.kind === 'integer') parsed.integers[flag.name] = flag.default;
    else if (flag.multiple) parsed.lists[flag.name] = [];
    else parsed.strings[flag.name] = flag.default;
  }
  const byName = new Map(flags.map((f) => [f.name, f]));
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--') {
      parsed.positionals.push(...argv.slice(i + 1));
      break;
    }
    if (arg === '-h' || arg === '--help') {
      parsed.help = true;
      continue;
    }
    if (!arg.startsWith('-') || arg === '-') {
      parsed.positionals.push(arg);
      continue;
    }
    const eq = arg.indexOf('=');
    const name = arg.startsWith('--') ? arg.slice(2, eq === -1 ? undefined : eq) : '';
    const inline = eq === -1 ? undefined : arg.slice(eq + 1);
    const flag = byName.get(name);
    if (!flag) {
      // Every flag is long, so "-x…" is a mistyped flag or an operand starting with "-" (an id): say how to pass one.
      const operandHint = arg.startsWith('--') ? '' : ' (put -- before an operand that starts with "-")';
      throw new UsageError(`unknown flag ${eq === -1 ? arg : arg.slice(0, eq)}${operandHint}`, command);
    }
    if (flag.kind === 'boolean') {
      if (inline !== undefined) throw new UsageError(`--${flag.name} takes no value (got "${inline}")`, command);
      parsed.booleans[flag.name] = true;
      continue;
    }
    const { value, next } = takeValue(flag, inline, argv, i, command);
    i = next;
    if (flag.kind === 'integer') {
      const n = /^-?\d+$/.test(value) ? Number(value) : NaN;
      if (!Number.isSafeInteger(n) || n < flag.min || n > flag.max) {
        throw new UsageError(`--${flag.name} must be a whole number from ${flag.min} to ${flag.max} (got "${value}")`, command);
      }
      parsed.integers[flag.name] = n;
    } else {
      if (flag.choices && !flag.choices.includes(value)) {
        throw new UsageError(`--${flag.name} must be one of ${flag.choices.join(', ')} (got "${value}")`, command);
      }
      if (flag.multiple) parsed.lists[flag.name]!.push(value);
      else parsed.strings[flag.name] = value;
    }
  }
  return parsed;
}
