import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { COMMANDS } from '../../src/cli/commands.js';
import { openSqliteStore } from '../../src/store/sqlite/open.js';
import { runCli } from '../helpers/cli.js';

// The commands come from the CLI's own table, so a command or flag added there is checked here too.
const valueFlags = COMMANDS.flatMap((c) => c.flags.filter((f) => f.kind !== 'boolean').map((f) => ({ command: c.name, flag: f })));
const integerFlags = valueFlags.filter(({ flag }) => flag.kind === 'integer');

const dir = mkdtempSync(join(tmpdir(), 'tabwire-cli-help-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// Each case runs the CLI many times; the limit only bounds a broken run on a busy machine.
const SLOW = { timeout: 180_000 };

describe('tabwire help', SLOW, () => {
  it('gives every command its own --help, the same as `tabwire help <command>`, naming each of its flags (regression: one global usage for all)', async () => {
    const helps = await Promise.all(
      COMMANDS.map(async (command) => {
        const [flagged, asked] = await Promise.all([runCli([command.name, '--help']), runCli(['help', command.name])]);
        expect(flagged.status, command.name).toBe(0);
        expect(asked.status, command.name).toBe(0);
        expect(asked.stdout, command.name).toBe(flagged.stdout);
        expect(flagged.stdout, command.name).toContain(`tabwire ${command.name}`);
        for (const flag of command.flags) expect(flagged.stdout, `${command.name} --help explains --${flag.name}`).toMatch(new RegExp(`--${flag.name}\\b`));
        expect(flagged.stdout, command.name).toContain('--help');
        return flagged.stdout;
      }),
    );
    expect(new Set(helps).size).toBe(COMMANDS.length);
    const global = await runCli(['--help']);
    expect(global.status).toBe(0);
    expect(helps).not.toContain(global.stdout);
    for (const command of COMMANDS) expect(global.stdout).toMatch(new RegExp(`^  ${command.name} `, 'm'));
    // -h is --help after a command too.
    expect((await runCli(['sign', '-h'])).stdout).toBe(helps[COMMANDS.findIndex((c) => c.name === 'sign')]);
  });

  it('explains --yes, --reject and --valid-days in words, not only in the usage line', async () => {
    const sign = (await runCli(['sign', '--help'])).stdout;
    expect(sign).toMatch(/^ {2}--yes +\S.*/m);
    expect(sign).toMatch(/^ {2}--reject +\S.*rejection/m);
    expect((await runCli(['identity', '--help'])).stdout).toMatch(/^ {2}--valid-days N +\S.*days/m);
  });
});

describe('usage errors name the flag', SLOW, () => {
  it('an unknown flag, for every command', async () => {
    for (const command of COMMANDS) {
      const { status, stderr } = await runCli([command.name, '--no-such-flag']);
      expect(status, command.name).toBe(2);
      expect(stderr, command.name).toContain(`tabwire ${command.name}: unknown flag --no-such-flag`);
      expect(stderr, command.name).toContain(`tabwire ${command.name} --help`);
    }
  });

  it('a missing value, for every flag that takes one', async () => {
    for (const { command, flag } of valueFlags) {
      const { status, stderr } = await runCli([command, `--${flag.name}`]);
      expect(status, `${command} --${flag.name}`).toBe(2);
      expect(stderr, `${command} --${flag.name}`).toContain(`--${flag.name} needs a value`);
    }
    // A following flag is not taken as the value.
    expect((await runCli(['sign', 'https://a.example/QuickLogin/Sign/x', '--key', '--yes'])).stderr).toContain('--key needs a value');
  });

  it('a bad value, for every whole-number flag', async () => {
    expect(integerFlags.length).toBeGreaterThan(0);
    for (const { command, flag } of integerFlags) {
      const { status, stderr } = await runCli([command, `--${flag.name}`, 'twelve']);
      expect(status, `${command} --${flag.name}`).toBe(2);
      expect(stderr).toContain(`--${flag.name} must be a whole number`);
      expect(stderr).toContain('"twelve"');
    }
  });

  it('an unknown command, an unknown action, a flag of another action, a missing operand', async () => {
    const unknown = await runCli(['frobnicate']);
    expect(unknown.status).toBe(2);
    expect(unknown.stderr).toContain('unknown command "frobnicate"');
    expect((await runCli(['identity', 'bless', 'x'])).stderr).toContain('unknown identity action "bless"');
    expect((await runCli(['identity', 'list', '--approve'])).stderr).toContain('--approve applies only to identity create');
    expect((await runCli(['identity', 'approve'])).stderr).toContain('identity approve needs <id>');
    expect((await runCli(['login'])).stderr).toContain('login needs --service URL');
    expect((await runCli(['login', '--service', 'auth.example.org'])).stderr).toContain('--service must be');
    expect((await runCli(['login', '--service', 'https://a.example', '--origin', 'https://a.example/page'])).stderr).toContain('--origin must be an origin');
  });
});

describe('list commands', SLOW, () => {
  it('print "none" on an empty store, then a header above the rows', async () => {
    const env = { TABWIRE_SQLITE_FILE: join(dir, 'lists.sqlite'), TABWIRE_LOG_LEVEL: 'warn' };
    for (const command of [['identity', 'list'], ['apikey', 'list'], ['account', 'list']]) {
      const { status, stdout } = await runCli(command, { env });
      expect(status, command.join(' ')).toBe(0);
      expect(stdout, command.join(' ')).toBe('none\n');
    }
    await runCli(['apikey', 'create', '--note', 'ci'], { env });
    expect((await runCli(['apikey', 'list'], { env })).stdout).toMatch(/^ID\tSTATE\tNOTE\n[^\t]+\tactive\tci\n$/);
    await runCli(['identity', 'create', '--prop', 'FIRST=Ada', '--key-out', join(dir, 'ada.key')], { env });
    expect((await runCli(['identity', 'list'], { env })).stdout).toMatch(/^ID\tSTATE\tKEY\tPROPERTIES\n[^\t]+\tCreated\tok\t\{"FIRST":"Ada"\}\n$/);
    // An identity whose key proves nothing (as the upgrade marks one stored before keys were checked) is listed as refused.
    const store = await openSqliteStore(env.TABWIRE_SQLITE_FILE);
    const [ada] = await store.identities.list();
    await store.identities.insert({ ...ada!, id: 'eve@legal.test', created: ada!.created + 1, clientPubKey: `AQ${'A'.repeat(41)}=`, keyProblem: 'small_order' });
    await store.close();
    expect((await runCli(['identity', 'list'], { env })).stdout).toMatch(/\neve@legal\.test\tCreated\trefused:small_order\t\{"FIRST":"Ada"\}\n$/);
  });
});

describe('operator commands and files', SLOW, () => {
  it('identity create onto an existing key file refuses before storing anything, and says why', async () => {
    const env = { TABWIRE_SQLITE_FILE: join(dir, 'key-exists.sqlite'), TABWIRE_LOG_LEVEL: 'warn' };
    const keyFile = join(dir, 'taken.key');
    writeFileSync(keyFile, 'another identity\'s key\n');
    const refused = await runCli(['identity', 'create', '--prop', 'FIRST=Ada', '--key-out', keyFile], { env });
    expect(refused.status).not.toBe(0);
    expect(refused.stderr).toContain(`${keyFile} exists already`);
    expect(refused.stderr).toContain('nothing was stored');
    expect(readFileSync(keyFile, 'utf8')).toBe('another identity\'s key\n');
    expect((await runCli(['identity', 'list'], { env })).stdout).toBe('none\n');
    // A fresh file works, and holds the identity it printed.
    const created = await runCli(['identity', 'create', '--prop', 'FIRST=Ada', '--key-out', join(dir, 'fresh.key')], { env });
    expect(created.status).toBe(0);
    expect(readFileSync(join(dir, 'fresh.key'), 'utf8')).toContain(`tabwire-legal-id: ${created.stdout.trim()}`);
  });

  it('find the same store from any folder (a relative sqliteFile is in the installation folder), and name a store they create', async () => {
    const relative = `tmp/cli-folders-${process.pid}.sqlite`;
    const env = { TABWIRE_SQLITE_FILE: relative, TABWIRE_LOG_LEVEL: 'warn' };
    const inInstall = join(process.cwd(), relative);
    const [a, b] = [mkdtempSync(join(tmpdir(), 'tabwire-cwd-a-')), mkdtempSync(join(tmpdir(), 'tabwire-cwd-b-'))];
    try {
      const created = await runCli(['identity', 'create', '--prop', 'FIRST=Ada', '--key-out', join(a, 'ada.key')], { env, cwd: a });
      expect(created.status).toBe(0);
      expect(created.stderr).toContain(`no store at ${inInstall} yet; it is created now`);
      const listed = await runCli(['identity', 'list'], { env, cwd: b });
      expect(listed.stdout).toContain(created.stdout.trim());
      expect(listed.stderr).not.toContain('no store at');
      expect(existsSync(join(a, relative))).toBe(false);
    } finally {
      for (const file of [inInstall, `${inInstall}-wal`, `${inInstall}-shm`]) rmSync(file, { force: true });
      rmSync(a, { recursive: true, force: true });
      rmSync(b, { recursive: true, force: true });
    }
  });
});
