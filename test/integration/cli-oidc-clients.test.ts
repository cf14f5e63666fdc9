import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.js';
import { ensureOidcKeys, ID_TOKEN_ALGS, PUBLISH_AHEAD_MS, publishedKeys, readOidcRings } from '../../src/oidc/signing-keys.js';
import { openSqliteStore } from '../../src/store/sqlite/open.js';
import type { OidcClient } from '../../src/store/oidc-store.js';
import { runCli } from '../helpers/cli.js';

/**
 * `tabwire oidc client add|list|remove` and `tabwire oidc keys rotate` (docs/cli.md "oidc"), the built CLI
 * against a real SQLite store: what add prints is the stored client, list never shows a secret, remove takes
 * it out of the store, and refused input is a usage error (status 2) that stores nothing; rotate adds a key
 * to each ID token key ring that is published at once and signs from the moment it prints.
 */

const dir = mkdtempSync(join(tmpdir(), 'tabwire-cli-oidc-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// Each case runs the CLI several times; the limit only bounds a broken run on a busy machine.
const SLOW = { timeout: 180_000 };

let stores = 0;
/** A store of its own for a case: the environment the CLI runs with, and the file. */
function freshStore() {
  const file = join(dir, `clients-${++stores}.sqlite`);
  return { file, env: { TABWIRE_SQLITE_FILE: file, TABWIRE_LOG_LEVEL: 'warn' } };
}

/** The clients in the store file, read directly (not through the CLI). */
async function storedClients(file: string): Promise<OidcClient[]> {
  const store = await openSqliteStore(file);
  try {
    return await store.oidcClients.list();
  } finally {
    await store.close();
  }
}

/** Runs `tabwire oidc client …`. */
const oidc = (args: string[], env: NodeJS.ProcessEnv) => runCli(['oidc', 'client', ...args], { env });

describe('tabwire oidc client', SLOW, () => {
  it('add prints the registration as JSON, stored as printed; list shows it without the secret; remove takes it away', async () => {
    const { file, env } = freshStore();
    expect((await oidc(['list'], env)).stdout).toBe('none\n');

    const added = await oidc(['add', '--name', 'Example shop', '--redirect-uri', 'https://shop.example/auth/callback', '--redirect-uri', 'http://127.0.0.1:3000/cb', '--post-logout-redirect-uri', 'https://shop.example/'], env);
    expect(added.status, added.stderr).toBe(0);
    const registration = JSON.parse(added.stdout) as Record<string, unknown>;
    expect(registration).toEqual({
      client_id: expect.stringMatching(/^[A-Za-z0-9_][A-Za-z0-9_-]{21}$/),
      client_secret: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      client_secret_expires_at: 0,
      client_id_issued_at: expect.any(Number),
      client_name: 'Example shop',
      redirect_uris: ['https://shop.example/auth/callback', 'http://127.0.0.1:3000/cb'],
      post_logout_redirect_uris: ['https://shop.example/'],
      token_endpoint_auth_method: 'client_secret_basic',
      subject_type: 'public',
      id_token_signed_response_alg: 'EdDSA',
    });
    const clientId = registration.client_id as string;
    const secret = registration.client_secret as string;

    const [stored] = await storedClients(file);
    expect(stored).toMatchObject({
      clientId,
      clientSecret: secret,
      tokenAuth: 'client_secret_basic',
      subjectType: 'public',
      idTokenAlg: 'EdDSA',
      name: 'Example shop',
      redirectUris: ['https://shop.example/auth/callback', 'http://127.0.0.1:3000/cb'],
      postLogoutRedirectUris: ['https://shop.example/'],
    });
    expect(Math.floor(stored!.createdAt / 1000)).toBe(registration.client_id_issued_at);

    const pub = await oidc(['add', '--public', '--pairwise', '--id-token-alg', 'ES256', '--redirect-uri', 'http://localhost:5173/callback'], env);
    expect(pub.status, pub.stderr).toBe(0);
    const publicRegistration = JSON.parse(pub.stdout) as Record<string, unknown>;
    expect(publicRegistration).not.toHaveProperty('client_secret');
    expect(publicRegistration).not.toHaveProperty('client_name');
    expect(publicRegistration).toMatchObject({ token_endpoint_auth_method: 'none', subject_type: 'pairwise', id_token_signed_response_alg: 'ES256' });
    const publicId = publicRegistration.client_id as string;
    expect((await storedClients(file)).find((c) => c.clientId === publicId)?.clientSecret).toBeNull();

    const post = JSON.parse((await oidc(['add', '--token-auth', 'post', '--redirect-uri', 'https://b.example/cb'], env)).stdout) as Record<string, unknown>;
    expect(post.token_endpoint_auth_method).toBe('client_secret_post');

    const listed = await oidc(['list'], env);
    expect(listed.status).toBe(0);
    expect(listed.stdout).toBe(
      [
        'CLIENT ID\tNAME\tTYPE\tREDIRECT URIS',
        `${clientId}\tExample shop\tconfidential\thttps://shop.example/auth/callback http://127.0.0.1:3000/cb`,
        `${publicId}\t\tpublic\thttp://localhost:5173/callback`,
        `${post.client_id as string}\t\tconfidential\thttps://b.example/cb`,
        '',
      ].join('\n'),
    );
    for (const s of [secret, post.client_secret as string]) expect(listed.stdout + listed.stderr).not.toContain(s);

    const removed = await oidc(['remove', clientId], env);
    expect(removed.status, removed.stderr).toBe(0);
    expect(removed.stdout).toBe(`${clientId}\tremoved (it can no longer log anyone in)\n`);
    expect((await storedClients(file)).map((c) => c.clientId)).toEqual([publicId, post.client_id]);
    expect((await oidc(['list'], env)).stdout).not.toContain(clientId);

    const again = await oidc(['remove', clientId], env);
    expect(again.status).toBe(1);
    expect(again.stderr).toBe(`no client ${clientId}\n`);
  });

  it('refuses bad redirect URIs and names with status 2, naming the value and why, and stores nothing (no store file even)', async () => {
    const { file, env } = freshStore();
    const cases: Array<[string[], string]> = [
      [['--redirect-uri', 'http://shop.example/cb'], 'redirect URI "http://shop.example/cb" uses http with the host shop.example, which is not loopback'],
      [['--redirect-uri', 'https://shop.example/cb#x'], 'redirect URI "https://shop.example/cb#x" has a fragment'],
      [['--redirect-uri', 'com.example.app:/cb'], 'redirect URI "com.example.app:/cb" uses the scheme com.example.app:'],
      [['--redirect-uri', 'shop.example/cb'], 'redirect URI "shop.example/cb" is not an absolute URL'],
      [['--redirect-uri', 'https://shop.example/cb', '--post-logout-redirect-uri', 'http://shop.example/'], 'post-logout redirect URI "http://shop.example/" uses http'],
      [Array.from({ length: 11 }, (_, i) => ['--redirect-uri', `https://shop.example/${i}`]).flat(), '11 redirect URIs given; a client has at most 10'],
      [['--redirect-uri', 'https://a.example/cb', '--redirect-uri', 'https://b.example/cb', '--pairwise'], '--pairwise needs every redirect URI on one host'],
      [['--redirect-uri', 'https://shop.example/cb', '--name', 'Shop\u202e'], 'client name "Shop\\u{202e}" contains U+202E'],
      [['--redirect-uri', 'https://shop.example/cb', '--public', '--token-auth', 'basic'], '--public and --token-auth exclude each other'],
      [['--name', 'Shop'], 'oidc client add needs at least one --redirect-uri URI'],
      [['--redirect-uri', 'https://shop.example/cb', '--token-auth', 'private_key_jwt'], '--token-auth must be one of basic, post'],
      [['--redirect-uri', 'https://shop.example/cb', '--id-token-alg', 'RS256'], '--id-token-alg must be one of EdDSA, ES256'],
    ];
    for (const [args, message] of cases) {
      const refused = await oidc(['add', ...args], env);
      expect(refused.status, args.join(' ')).toBe(2);
      expect(refused.stdout, args.join(' ')).toBe('');
      expect(refused.stderr, args.join(' ')).toContain(`tabwire oidc: ${message}`);
      expect(refused.stderr, args.join(' ')).toContain('(see `tabwire oidc --help`)');
    }
    // The rules are checked before the store is opened: not even an empty store was created.
    expect(existsSync(file)).toBe(false);
    expect((await oidc(['list'], env)).stdout).toBe('none\n');
  });

  it('refuses actions and operands it does not know, and add\'s flags given to another action', async () => {
    const { env } = freshStore();
    const cases: Array<[string[], string]> = [
      [['oidc', 'clients', 'list'], 'unknown oidc action "clients"'],
      [['oidc', 'client'], 'oidc client needs an action: add, list, remove'],
      [['oidc', 'client', 'delete', 'x'], 'unknown oidc client action "delete"; expected one of add, list, remove'],
      [['oidc', 'client', 'remove'], 'oidc client remove needs <client_id>'],
      [['oidc', 'client', 'list', 'extra'], 'oidc client list: unexpected argument "extra"'],
      [['oidc', 'client', 'list', '--public'], '--public applies only to oidc client add'],
      [['oidc', 'client', 'remove', 'x', '--redirect-uri', 'https://a.example/'], '--redirect-uri applies only to oidc client add'],
      [['oidc'], 'oidc needs an action: client, keys'],
      [['oidc', 'keys'], 'oidc keys needs an action: rotate'],
      [['oidc', 'keys', 'list'], 'unknown oidc keys action "list"; expected one of rotate'],
      [['oidc', 'keys', 'rotate', 'now'], 'oidc keys rotate: unexpected argument "now"'],
      [['oidc', 'keys', 'rotate', '--id-token-alg', 'ES256'], '--id-token-alg applies only to oidc client add'],
    ];
    for (const [args, message] of cases) {
      const refused = await runCli(args, { env });
      expect(refused.status, args.join(' ')).toBe(2);
      expect(refused.stderr, args.join(' ')).toContain(message);
    }
  });
});

describe('tabwire oidc keys rotate', SLOW, () => {
  it('adds a key to each ring, prints its kid and when it signs; the JWKS publishes it at once, it signs from then, the old key stays published', async () => {
    const { file, env } = freshStore();
    // The store as a running service left it: each ring with its first key.
    const before = await openSqliteStore(file);
    try {
      await ensureOidcKeys(before.serverKeys, systemClock);
    } finally {
      await before.close();
    }
    const rotated = await runCli(['oidc', 'keys', 'rotate'], { env });
    expect(rotated.status, rotated.stderr).toBe(0);
    const lines = rotated.stdout.trimEnd().split('\n');
    expect(lines.slice(0, 2).map((line) => line.split('\t')[0])).toEqual(['EdDSA', 'ES256']);
    const kids = Object.fromEntries(lines.slice(0, 2).map((line) => line.split('\t'))) as Record<string, string>;

    const store = await openSqliteStore(file);
    try {
      const rings = await readOidcRings(store.serverKeys);
      for (const alg of ID_TOKEN_ALGS) {
        expect(rings[alg].map((k) => k.kid)).toHaveLength(2);
        expect(rings[alg][0]!.kid, alg).toBe(kids[alg]);
      }
      const createdAt = rings.EdDSA[0]!.createdAt;
      // The time it prints is when the new keys start to sign.
      expect(lines[2]).toContain(`they sign from ${new Date(createdAt + PUBLISH_AHEAD_MS).toISOString()}`);
      const signing = (at: number) => publishedKeys(rings, at, 3_900_000);
      // Until then the old keys sign (the first key of each algorithm) and the new ones are published beside them.
      const ahead = signing(createdAt + PUBLISH_AHEAD_MS - 1);
      expect(ahead.map((k) => k.kid)).toEqual([rings.EdDSA[1]!.kid, kids.EdDSA, rings.ES256[1]!.kid, kids.ES256]);
      const after = signing(createdAt + PUBLISH_AHEAD_MS);
      expect(after.map((k) => k.kid)).toEqual([kids.EdDSA, rings.EdDSA[1]!.kid, kids.ES256, rings.ES256[1]!.kid]);
    } finally {
      await store.close();
    }
  });
});
