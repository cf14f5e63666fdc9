import { describe, expect, it } from 'vitest';
import { parseFlags, UsageError, type Flag } from '../../src/cli/args.js';
import { COMMANDS } from '../../src/cli/commands.js';
import { commandHelp } from '../../src/cli/help.js';
import { listOutput } from '../../src/cli/list-output.js';
import { parseOrigin, parseServiceUrl } from '../../src/cli/login-command.js';
import { parseSignUrl } from '../../src/cli/sign-url.js';
import { formatQr, useColour } from '../../src/cli/terminal-qr.js';

const FLAGS: Flag[] = [
  { kind: 'string', name: 'key', value: 'FILE', help: 'k' },
  { kind: 'string', name: 'prop', value: 'N=V', multiple: true, help: 'p' },
  { kind: 'boolean', name: 'yes', help: 'y' },
  { kind: 'integer', name: 'days', value: 'N', min: 1, max: 10, default: 3, help: 'd' },
  { kind: 'string', name: 'mode', value: 'M', choices: ['a', 'b'], help: 'm' },
];
const usage = (argv: string[]) => {
  try {
    parseFlags('demo', FLAGS, argv);
  } catch (error) {
    expect(error).toBeInstanceOf(UsageError);
    expect((error as UsageError).command).toBe('demo');
    return (error as Error).message;
  }
  throw new Error(`no usage error for ${argv.join(' ')}`);
};

describe('parseFlags', () => {
  it('reads both value forms, repeats, booleans, defaults and positionals', () => {
    const args = parseFlags('demo', FLAGS, ['pos', '--key', 'a.key', '--prop=A=1', '--prop', 'B=2', '--yes', '--', '--not-a-flag']);
    expect(args.positionals).toEqual(['pos', '--not-a-flag']);
    expect(args.strings.key).toBe('a.key');
    expect(args.lists.prop).toEqual(['A=1', 'B=2']);
    expect(args.booleans.yes).toBe(true);
    expect(args.integers.days).toBe(3);
    expect(parseFlags('demo', FLAGS, ['-h']).help).toBe(true);
    // A lone "-" is an operand (stdin, by convention), not a flag.
    expect(parseFlags('demo', FLAGS, ['-']).positionals).toEqual(['-']);
  });

  it('names the flag in every usage error', () => {
    expect(usage(['--nope'])).toBe('unknown flag --nope');
    expect(usage(['--nope=1'])).toBe('unknown flag --nope');
    expect(usage(['-x'])).toBe('unknown flag -x (put -- before an operand that starts with "-")');
    // The way out it names works: an id that starts with "-" is an operand after --.
    expect(parseFlags('demo', FLAGS, ['revoke', '--', '-uLG8KjrWQw3']).positionals).toEqual(['revoke', '-uLG8KjrWQw3']);
    expect(usage(['--key'])).toBe('--key needs a value (FILE)');
    expect(usage(['--key', '--yes'])).toBe('--key needs a value (FILE)');
    expect(usage(['--yes=no'])).toContain('--yes takes no value');
    expect(usage(['--days', '0'])).toBe('--days must be a whole number from 1 to 10 (got "0")');
    expect(usage(['--days', '2.5'])).toContain('--days must be a whole number');
    expect(usage(['--mode', 'c'])).toBe('--mode must be one of a, b (got "c")');
  });
});

describe('help text', () => {
  it('keeps to 80 columns except for single words longer than a line', () => {
    for (const command of COMMANDS) {
      for (const line of commandHelp(command).split('\n').slice(1)) {
        if (line.length > 80) expect(line.trim(), `${command.name}: ${line}`).not.toMatch(/ /);
      }
    }
  });
});

describe('parseSignUrl', () => {
  it('takes a signUrl, with or without a path prefix', () => {
    expect(parseSignUrl(' https://auth.example.org/QuickLogin/Sign/abc_-1 ').href).toBe('https://auth.example.org/QuickLogin/Sign/abc_-1');
    expect(parseSignUrl('http://127.0.0.1:8080/tabwire/QuickLogin/Sign/x').pathname).toBe('/tabwire/QuickLogin/Sign/x');
  });
  it.each(['<signUrl>', 'SIGN_URL', 'sign-url', '$SIGN_URL', '${SIGN_URL}', '{signUrl}', '...', '', '<paste the signUrl printed above>'])(
    'calls %j a placeholder',
    (text) => expect(() => parseSignUrl(text)).toThrow(/is a placeholder, not a signUrl: paste the signUrl/),
  );
  it('tells a malformed URL, another scheme and another path apart', () => {
    expect(() => parseSignUrl('auth.example.org/QuickLogin/Sign/abc')).toThrow(/is not a URL/);
    expect(() => parseSignUrl('ftp://auth.example.org/QuickLogin/Sign/abc')).toThrow(/is not an http\(s\) URL/);
    expect(() => parseSignUrl('https://auth.example.org/QuickLogin/Qr/abc.png')).toThrow(/path must end in \/QuickLogin\/Sign\/<code>/);
  });
});

describe('login arguments', () => {
  it('defaults the Origin to the service\'s, accepts another origin or none, and refuses a URL with a path', () => {
    const service = parseServiceUrl('https://auth.example.org/prefix/?x=1#y');
    expect(service.href).toBe('https://auth.example.org/prefix/');
    expect(parseOrigin(undefined, service)).toBe('https://auth.example.org');
    expect(parseOrigin('none', service)).toBeNull();
    expect(parseOrigin('https://shop.example:8443', service)).toBe('https://shop.example:8443');
    expect(() => parseOrigin('https://shop.example/', service)).toThrow(/--origin must be an origin/);
    expect(() => parseOrigin('shop.example', service)).toThrow(/--origin must be an origin/);
    expect(() => parseServiceUrl('ws://auth.example.org')).toThrow(/--service must be an http\(s\) URL/);
  });
});

describe('terminal output', () => {
  it('prints the QR black on white on a colour terminal, plain otherwise, and drops control characters from the wire', () => {
    expect(formatQr('\u2588 \u2580\n\u2584\u001b[2J', false)).toBe('\u2588 \u2580\n\u2584    ');
    expect(formatQr('\u2588', true)).toBe('\x1b[38;5;16m\x1b[48;5;231m\u2588\x1b[0m');
    expect(useColour({ isTTY: true }, {})).toBe(true);
    expect(useColour({ isTTY: true }, { NO_COLOR: '1' })).toBe(false);
    expect(useColour({ isTTY: true }, { NO_COLOR: '' })).toBe(true);
    expect(useColour({}, {})).toBe(false);
  });

  it('lists print a header above the rows, or "none"', () => {
    expect(listOutput(['ID', 'STATE'], [])).toBe('none\n');
    expect(listOutput(['ID', 'STATE'], [['a', 'active']])).toBe('ID\tSTATE\na\tactive\n');
  });
});
