import { HELP_FLAG, type Flag } from './args.js';

/** Help texts, rendered from the command table (commands.ts); takes the commands as arguments, imports none. */

/** What help needs of a command. */
export interface HelpSubject {
  name: string;
  summary: string;
  usage: readonly string[];
  description: string;
  flags: readonly Flag[];
}

const WIDTH = 80;

/** Wraps one paragraph to WIDTH columns, every line indented by `indent`. */
function wrap(text: string, indent: number, first = indent): string {
  const lines: string[] = [];
  let line = ' '.repeat(first);
  let empty = true;
  // A space inside [...] does not break: `[--timeout SECONDS]` stays on one line.
  for (const word of text.split(/\s+(?![^[]*\])/).filter((w) => w !== '')) {
    if (!empty && line.length + 1 + word.length > WIDTH) {
      lines.push(line);
      line = ' '.repeat(indent);
      empty = true;
    }
    line += (empty ? '' : ' ') + word;
    empty = false;
  }
  lines.push(line);
  return lines.join('\n');
}

const flagLabel = (flag: Flag): string =>
  (flag.name === 'help' ? '-h, --help' : `--${flag.name}`) + (flag.kind === 'boolean' ? '' : ` ${flag.value}`);

function flagHelp(flag: Flag): string {
  const choices = flag.kind === 'string' && flag.choices ? ` One of: ${flag.choices.join(', ')}.` : '';
  const repeat = flag.kind === 'string' && flag.multiple ? ' May be repeated.' : '';
  return `${flag.help}${choices}${repeat}`;
}

/** `tabwire <command> --help`: what it does, its usage, and every flag it takes (--help included). */
export function commandHelp(command: HelpSubject): string {
  const flags = [...command.flags, HELP_FLAG];
  const column = Math.min(28, Math.max(...flags.map((f) => flagLabel(f).length)) + 4);
  const flagLines = flags.map((flag) => {
    const label = `  ${flagLabel(flag)}`;
    const text = flagHelp(flag);
    return label.length + 2 <= column ? label.padEnd(column) + wrap(text, column, column).slice(column) : `${label}\n${wrap(text, column)}`;
  });
  return [
    `tabwire ${command.name}: ${command.summary}`,
    '',
    'Usage:',
    ...command.usage.map((u) => wrap(`tabwire ${u}`, 6, 2)),
    '',
    ...command.description.split('\n\n').flatMap((p) => [wrap(p, 0), '']),
    'Flags:',
    ...flagLines,
    '',
  ].join('\n');
}

/** `tabwire --help`: every command with its summary. */
export function globalHelp(commands: readonly HelpSubject[]): string {
  const width = Math.max(...commands.map((c) => c.name.length)) + 4;
  return [
    'tabwire: QR-code login service and its command-line tools',
    '',
    'Usage: tabwire <command> [arguments] [flags]',
    '',
    'Commands:',
    ...commands.map((c) => `  ${c.name.padEnd(width)}${c.summary}`),
    '',
    wrap('Run `tabwire <command> --help` (or `tabwire help <command>`) for what a command does and every flag it takes. Commands that work on the store are configured like the service, by TABWIRE_* variables and TABWIRE_CONFIG_FILE. The full reference is docs/cli.md.', 0),
    '',
  ].join('\n');
}
