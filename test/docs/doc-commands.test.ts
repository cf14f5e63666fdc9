import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readOidcRings } from '../../src/oidc/signing-keys.js';
import { openStore } from '../../src/store/open.js';
import { runCli } from '../helpers/cli.js';
import { kill, startProcess } from '../helpers/process.js';
import { freePort } from '../helpers/service.js';
import { blockNamed, blocksRunBy } from './doc-blocks.js';
import { readerEnv, shell, type Shell } from './doc-shell.js';

/**
 * The operator's and the terminal user's commands in docs/cli.md, docs/signing.md, docs/wallet.md and
 * docs/deployment.md, taken from the Markdown and run with bash in the clone against the built service
 * (dist/main.js) on a free loopback port instead of 8080; what each document says they print is checked.
 * The CLI finds the service's store through the same TABWIRE_SQLITE_FILE, as the documents say.
 */

const SLOW = { timeout: 120_000 };
const root = process.cwd();
const blocks = blocksRunBy('test/docs/doc-commands.test.ts');
let port: number;
let base: string;
let service: ChildProcess;
let dir: string;
let env: NodeJS.ProcessEnv;
const shells: Shell[] = [];
/** Key files the blocks made in the clone (mktemp -u ada-XXXXXX.key), removed afterwards. */
const madeKeys: string[] = [];

/** The key files in the clone (other test files make theirs there too, at the same time). */
function keyFiles(): string[] {
  return readdirSync(root).filter((name) => /^ada-.*\.key$/.test(name));
}

/** A file's text, or '' when another test file removed its own key file meanwhile. */
function contents(file: string): string {
  try {
    return readFileSync(join(root, file), 'utf8');
  } catch {
    return '';
  }
}

/** A block's text with the service's port for the documents' 8080. */
const text = (name: string) => blockNamed(blocks, name).text.replaceAll('127.0.0.1:8080', `127.0.0.1:${port}`);

function run(script: string, o: { input?: string; env?: NodeJS.ProcessEnv } = {}): Shell {
  const started = shell(script, { cwd: root, env: o.env ?? env, ...(o.input === undefined ? {} : { input: o.input }) });
  shells.push(started);
  return started;
}

/** `identity list` rows (after the header) as [id, state, key, properties]. */
const rows = (listing: string) =>
  listing
    .trim()
    .split('\n')
    .slice(1)
    .map((line) => line.split('\t'));

beforeAll(async () => {
  port = await freePort();
  base = `http://127.0.0.1:${port}`;
  dir = mkdtempSync(join(tmpdir(), 'tabwire-doc-commands-'));
  const store = { TABWIRE_SQLITE_FILE: join(dir, 'tabwire.sqlite') };
  env = readerEnv(store);
  service = await startProcess({ ...store, TABWIRE_PORT: String(port), TABWIRE_LOG_LEVEL: 'warn' }, base);
});

afterAll(async () => {
  for (const started of shells) await started.stop();
  if (service) await kill(service, 'SIGTERM');
  for (const file of madeKeys) rmSync(join(root, file), { force: true });
  rmSync(dir, { recursive: true, force: true });
});

describe('documented commands, run as written', () => {
  it('runs every block marked for this file', () => {
    expect([...blocks.keys()].sort()).toEqual(['backup', 'identities', 'login', 'oidc-clients', 'oidc-keys', 'oidc-setup', 'sign', 'wallet-approve', 'ways-to-run'].sort());
  });

  it('docs/cli.md: the ways to run tabwire print the same thing (`help` for <command>)', SLOW, async () => {
    // "when the package is installed": npm puts a `tabwire` on PATH that runs the package's bin.
    const onPath = join(dir, 'bin');
    mkdirSync(onPath);
    writeFileSync(join(onPath, 'tabwire'), `#!/bin/sh\nexec node '${join(root, 'dist/cli/main.js')}' "$@"\n`, { mode: 0o755 });

    const lines = text('ways-to-run').replaceAll('<command> ...', 'help');
    const ran = run(lines, { env: { ...env, PATH: `${onPath}:${env.PATH}` } });
    expect(await ran.exited, ran.stderr).toBe(0);
    const help = (await runCli(['help'])).stdout;
    expect(help).toMatch(/^tabwire: QR-code login service/);
    expect(help).toMatch(/^ {2}identity +create identities/m);
    const commands = lines.split('\n').filter((line) => line.trim() !== '' && !line.startsWith('#'));
    expect(commands.length).toBeGreaterThanOrEqual(3);
    expect(ran.stdout).toBe(help.repeat(commands.length));
  });

  it('docs/cli.md: login prints the signUrl, sign approves it, and login prints the verified identity', SLOW, async () => {
    const login = run(text('login'));
    const keyFile = (await login.waitFor(/key file: (\S+)/, 'the key file'))[1]!;
    madeKeys.push(keyFile);
    // The signUrl, then the line to sign it with in another terminal (printed in that order).
    const hinted = (await login.waitFor(/npm run -s tabwire -- sign '(\S+)' --key FILE/, 'login to print the sign command'))[1]!;
    const signUrl = /signUrl: (\S+)/.exec(login.stderr)?.[1];
    expect(signUrl).toBe(hinted);
    expect(signUrl).toMatch(new RegExp(`^${base}/QuickLogin/Sign/`));

    const sign = text('sign');
    expect(sign).toContain('<the signUrl login printed>');
    const signer = run(sign.replace('<the signUrl login printed>', signUrl!).replace('<the key file printed above>', keyFile), { input: 'y\n' });
    expect(await signer.exited, signer.stderr).toBe(0);
    expect(signer.stdout.trim().split('\n').at(-1)).toBe('approved');

    expect(await login.exited, login.stderr).toBe(0);
    expect(login.stdout).toMatch(/^Logged in: \S+@\S+ \(Approved, provider \S+\)$/m);
    expect(login.stdout).toMatch(/^ {2}FIRST +Ada$/m);
    expect(login.stdout).toMatch(/^ {2}COUNTRY +GB$/m);
    expect(login.stdout).toContain(`ServerSignature verified with key `);
    expect(login.stdout).toContain(`${base}/.well-known/tabwire/result-keys`);
  });

  it('docs/signing.md: create, approve and list; the key file holds the id line, mode 0600, a new one each run', SLOW, async () => {
    for (const round of [1, 2]) {
      const ran = run(text('identities'));
      expect(await ran.exited, `round ${round}: ${ran.stderr}`).toBe(0);
      const [approved, state] = ran.stdout.split('\n')[0]!.split('\t');
      expect(state).toBe('Approved');
      const listing = ran.stdout.slice(ran.stdout.indexOf('\n') + 1);
      expect(listing.split('\n')[0]).toBe('ID\tSTATE\tKEY\tPROPERTIES');
      expect(rows(listing)).toContainEqual([approved, 'Approved', 'ok', '{"FIRST":"Ada","LAST":"Lovelace"}']);

      // The block does not print the file's name: it is the one whose first line names the new identity.
      const mine = keyFiles().filter((file) => contents(file).startsWith(`tabwire-legal-id: ${approved}\n`));
      expect(mine).toHaveLength(1);
      madeKeys.push(mine[0]!);
      const key = join(root, mine[0]!);
      expect(statSync(key).mode & 0o777).toBe(0o600);
      expect(readFileSync(key, 'utf8').split('\n')[1]).toBe('-----BEGIN PRIVATE KEY-----');
    }
  });

  it('docs/wallet.md: the operator lists the applied identity (Created) and approves it by its id', SLOW, async () => {
    // The wallet's application stands here as an identity created without --approve.
    const applied = await runCli(['identity', 'create', '--prop', 'FIRST=Grace', '--key-out', join(dir, 'grace.key')], { env: { TABWIRE_SQLITE_FILE: env.TABWIRE_SQLITE_FILE } });
    expect(applied.status, applied.stderr).toBe(0);
    const id = applied.stdout.trim();

    const block = text('wallet-approve');
    expect(block).toContain('<id>');
    const ran = run(block.replace('<id>', id));
    expect(await ran.exited, ran.stderr).toBe(0);
    expect(rows(ran.stdout.split('\n').slice(0, -2).join('\n'))).toContainEqual([id, 'Created', 'ok', '{"FIRST":"Grace"}']);
    expect(ran.stdout.trim().split('\n').at(-1)).toBe(`${id}\tApproved`);
  });

  it('docs/oidc.md: the five-minute set-up prints the client id, its secret and the issuer, and the client can start a login', SLOW, async () => {
    const ran = run(text('oidc-setup'));
    expect(await ran.exited, ran.stderr).toBe(0);
    const [clientId, secret, issuer, ...rest] = ran.stdout.trim().split('\n');
    expect(rest).toEqual([]);
    expect(secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(issuer).toBe(`${base}/oidc`);
    // The registered client is known to the running service: an authorization request goes to the login page.
    const query = new URLSearchParams({ client_id: clientId!, response_type: 'code', scope: 'openid', redirect_uri: 'http://127.0.0.1:3000/callback', state: 's', nonce: 'n' });
    const answer = await fetch(`${base}/oidc/auth?${query}`, { redirect: 'manual' });
    expect([answer.status, answer.headers.get('location')]).toEqual([303, expect.stringMatching(/^\/oidc\/interaction\/[A-Za-z0-9_-]+$/)]);
  });

  it('docs/cli.md: oidc client add prints the registration as JSON, list shows the client without its secret, remove takes it out', SLOW, async () => {
    const ran = run(text('oidc-clients'));
    expect(await ran.exited, ran.stderr).toBe(0);
    // The block prints the JSON object (pretty, ending in a line "}"), then the list, then the removal.
    const end = ran.stdout.indexOf('\n}\n') + 3;
    const registration = JSON.parse(ran.stdout.slice(0, end)) as Record<string, unknown>;
    expect(registration).toMatchObject({
      client_name: 'Example shop',
      redirect_uris: ['https://shop.example/auth/callback'],
      post_logout_redirect_uris: ['https://shop.example/'],
      token_endpoint_auth_method: 'client_secret_basic',
      subject_type: 'public',
      id_token_signed_response_alg: 'EdDSA',
    });
    const id = registration.client_id as string;
    const [listing, removal] = [ran.stdout.slice(end, ran.stdout.lastIndexOf(id)), ran.stdout.slice(ran.stdout.lastIndexOf(id))];
    expect(listing.split('\n')[0]).toBe('CLIENT ID\tNAME\tTYPE\tREDIRECT URIS');
    expect(listing.split('\n').slice(1)).toContain(`${id}\tExample shop\tconfidential\thttps://shop.example/auth/callback`);
    expect(registration.client_secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(ran.stdout.slice(end), 'the list and the removal').not.toContain(registration.client_secret as string);
    expect(removal).toBe(`${id}\tremoved (it can no longer log anyone in)\n`);
    const store = await openStore({ sqliteFile: env.TABWIRE_SQLITE_FILE!, databasePoolSize: 1 });
    try {
      expect(await store.oidcClients.get(id)).toBeUndefined();
    } finally {
      await store.close();
    }
  });

  it('docs/cli.md: oidc keys rotate prints a new kid per algorithm, stored as the newest key of its ring, and when they sign', SLOW, async () => {
    const ran = run(text('oidc-keys'));
    expect(await ran.exited, ran.stderr).toBe(0);
    const lines = ran.stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(/^EdDSA\t[A-Za-z0-9_-]{16}$/);
    expect(lines[1]).toMatch(/^ES256\t[A-Za-z0-9_-]{16}$/);
    expect(lines[2]).toMatch(/^\(new ID token signing keys: .* they sign from \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z, 2 minutes from now, /);
    const store = await openStore({ sqliteFile: env.TABWIRE_SQLITE_FILE!, databasePoolSize: 1 });
    try {
      const rings = await readOidcRings(store.serverKeys);
      expect([rings.EdDSA[0]!.kid, rings.ES256[0]!.kid]).toEqual([lines[0]!.split('\t')[1], lines[1]!.split('\t')[1]]);
    } finally {
      await store.close();
    }
  });

  it('docs/deployment.md: the online backup beside the running node is a whole store', SLOW, async () => {
    // On a host the state directory is /var/lib/tabwire and belongs to the service user (hence runuser); here
    // it is this test's directory, which the test's own user owns.
    const made = await runCli(['identity', 'create', '--prop', 'FIRST=Kept', '--key-out', join(dir, 'kept.key')], { env: { TABWIRE_SQLITE_FILE: env.TABWIRE_SQLITE_FILE } });
    expect(made.status, made.stderr).toBe(0);
    const block = text('backup');
    expect(block).toMatch(/^runuser -u tabwire -- sqlite3 \/var\/lib\/tabwire\/tabwire\.sqlite/);
    const ran = run(block.replace('runuser -u tabwire -- ', '').replaceAll('/var/lib/tabwire', dir));
    expect(await ran.exited, ran.stderr).toBe(0);
    const copies = readdirSync(dir).filter((name) => /^backup-\d{8}-\d{6}\.sqlite$/.test(name));
    expect(copies).toHaveLength(1);
    expect(existsSync(join(dir, `${copies[0]}-wal`))).toBe(false);

    const listed = rows((await runCli(['identity', 'list'], { env: { TABWIRE_SQLITE_FILE: env.TABWIRE_SQLITE_FILE } })).stdout);
    const restored = await openStore({ sqliteFile: join(dir, copies[0]!), databasePoolSize: 1 });
    try {
      expect(listed.map(([id]) => id)).toContain(made.stdout.trim());
      for (const [id, state] of listed) expect((await restored.identities.get(id!))?.state).toBe(state);
    } finally {
      await restored.close();
    }
  });
});
