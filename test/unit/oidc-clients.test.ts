import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { parseFlags } from '../../src/cli/args.js';
import {
  ClientRuleError,
  clientNameProblem,
  clientRegistration,
  clientType,
  MAX_REDIRECT_URIS,
  newClient,
  newClientId,
  newClientSecret,
  redirectUriProblem,
  type ClientRequest,
} from '../../src/oidc/clients.js';

const REQUEST: ClientRequest = {
  redirectUris: ['https://rp.example/callback'],
  postLogoutRedirectUris: [],
  name: null,
  tokenAuth: 'client_secret_basic',
  pairwise: false,
  idTokenAlg: 'EdDSA',
};

/** The message newClient refuses `request` with. */
function refusal(request: Partial<ClientRequest>): string {
  try {
    newClient({ ...REQUEST, ...request }, 1_700_000_000_000);
  } catch (error) {
    expect(error).toBeInstanceOf(ClientRuleError);
    return (error as Error).message;
  }
  throw new Error(`accepted ${JSON.stringify(request)}`);
}

describe('redirect URIs', () => {
  it('accepts https anywhere and http only to a loopback host, kept exactly as written', () => {
    const accepted = [
      'https://rp.example/callback',
      'https://rp.example:8443/auth/cb?tenant=a&x=%20y',
      'https://rp.example',
      'https://localhost/cb',
      'https://192.0.2.7/cb',
      'http://127.0.0.1:53682/cb',
      'http://127.8.9.10/cb',
      'http://[::1]:8080/cb',
      'http://localhost:3000/api/auth/callback/tabwire',
    ];
    for (const uri of accepted) expect(redirectUriProblem(uri), uri).toBeUndefined();
    const client = newClient({ ...REQUEST, redirectUris: accepted }, 0);
    expect(client.redirectUris).toEqual(accepted);
  });

  it('refuses each bad form with a reason', () => {
    const refused: Array<[string, RegExp]> = [
      ['', /is empty/],
      ['rp.example/callback', /not an absolute URL/],
      ['/callback', /not an absolute URL/],
      ['https:rp.example/cb', /https: must be followed by \/\/host/],
      ['https:/rp.example/cb', /must be followed by \/\/host/],
      ['https://rp.example/cb#frag', /fragment.*RFC 6749 §3\.1\.2/],
      ['https://rp.example/cb#', /fragment/],
      ['http://rp.example/cb', /http with the host rp\.example, which is not loopback/],
      ['http://10.0.0.2/cb', /not loopback/],
      ['http://[::ffff:127.0.0.1]/cb', /not loopback/],
      ['http://localhost.rp.example/cb', /not loopback/],
      ['http://128.0.0.1/cb', /not loopback/],
      ['com.example.app:/oauth2redirect', /scheme com\.example\.app:.*private-use schemes/],
      ['javascript://rp.example/%0aalert(1)', /scheme javascript:/],
      ['data://text/html', /scheme data:/],
      ['ftp://rp.example/cb', /scheme ftp:/],
      ['https://user:pw@rp.example/cb', /user name or password/],
      ['https://rp.example@evil.example/cb', /user name or password/],
      ['https://@rp.example/cb', /user name or password/],
      ['https://rp.example/a b', /contains a space/],
      [' https://rp.example/cb', /contains a space/],
      ['https://rp.example/cb\n', /contains U\+000A/],
      ['https:\\\\rp.example\\cb', /contains "\\"/],
      ['https://rp.example/<script>', /contains "<"/],
      ['https://bücher.example/cb', /contains U\+00FC.*punycode/],
      ['https:///cb', /has no host after \/\//],
      ['https://:443/cb', /not a valid URL/],
      ['https://rp.example:99999/cb', /not a valid URL/],
      [`https://rp.example/${'a'.repeat(2048)}`, /longer than 2048/],
    ];
    for (const [uri, reason] of refused) expect(redirectUriProblem(uri), JSON.stringify(uri)).toMatch(reason);
  });

  it('names the URI and the list in the refusal, escaping what a terminal would act on', () => {
    expect(refusal({ redirectUris: ['https://rp.example/ok', 'http://rp.example/cb'] })).toBe(
      'redirect URI "http://rp.example/cb" uses http with the host rp.example, which is not loopback: use https (RFC 6749 §3.1.2.1), or http only with 127.0.0.1, [::1] or localhost (RFC 8252 §7.3)',
    );
    expect(refusal({ postLogoutRedirectUris: ['https://rp.example/bye#top'] })).toMatch(/^post-logout redirect URI "https:\/\/rp\.example\/bye#top" has a fragment/);
    expect(refusal({ redirectUris: ['https://rp.example/\u001b[2J'] })).toMatch(/^redirect URI "https:\/\/rp\.example\/\\u\{1b\}\[2J" contains U\+001B/);
  });

  it('refuses none, more than ten, and one given twice', () => {
    expect(refusal({ redirectUris: [] })).toBe('a client needs at least one redirect URI');
    const eleven = Array.from({ length: MAX_REDIRECT_URIS + 1 }, (_, i) => `https://rp.example/cb/${i}`);
    expect(refusal({ redirectUris: eleven })).toBe('11 redirect URIs given; a client has at most 10');
    expect(refusal({ postLogoutRedirectUris: eleven })).toBe('11 post-logout redirect URIs given; a client has at most 10');
    expect(newClient({ ...REQUEST, redirectUris: eleven.slice(1) }, 0).redirectUris).toHaveLength(10);
    expect(refusal({ redirectUris: ['https://rp.example/cb', 'https://rp.example/cb'] })).toBe('redirect URI "https://rp.example/cb" is given twice');
    // Exact strings: these differ, so both are kept (the provider compares exactly).
    expect(newClient({ ...REQUEST, redirectUris: ['https://rp.example/cb', 'https://rp.example/cb/'] }, 0).redirectUris).toHaveLength(2);
  });

  it('--pairwise: redirect URIs on one host (with its port), since the subject is computed per host', () => {
    expect(newClient({ ...REQUEST, pairwise: true, redirectUris: ['https://rp.example/a', 'https://rp.example/b'] }, 0).subjectType).toBe('pairwise');
    expect(refusal({ pairwise: true, redirectUris: ['https://rp.example/a', 'https://other.example/b'] })).toMatch(/--pairwise needs every redirect URI on one host, but they are on rp\.example, other\.example/);
    expect(refusal({ pairwise: true, redirectUris: ['http://127.0.0.1:3000/a', 'http://127.0.0.1:4000/b'] })).toMatch(/127\.0\.0\.1:3000, 127\.0\.0\.1:4000/);
    // Without --pairwise several hosts are fine.
    expect(newClient({ ...REQUEST, redirectUris: ['https://rp.example/a', 'https://other.example/b'] }, 0).subjectType).toBe('public');
  });
});

describe('client names', () => {
  it('accept one line of visible text up to 100 characters', () => {
    for (const name of ['Shop', 'Bücherei Köln', 'Ω'.repeat(100), '😀'.repeat(100), 'Agent API (test)']) expect(clientNameProblem(name), name).toBeUndefined();
  });

  it('refuse blank, too long, padded, control and invisible characters', () => {
    expect(clientNameProblem('')).toBe('is empty');
    expect(clientNameProblem('   ')).toBe('is empty');
    expect(clientNameProblem('x'.repeat(101))).toBe('has 101 characters; at most 100');
    expect(clientNameProblem(' Shop')).toBe('starts or ends with a space');
    expect(clientNameProblem('Shop\nLog in as admin')).toMatch(/U\+000A, a control or invisible character/);
    expect(clientNameProblem('Shop\u001b[31m')).toMatch(/U\+001B/);
    expect(clientNameProblem('Shop\u0085')).toMatch(/U\+0085/);
    // A right-to-left override makes "Shop" read as something else; a zero-width space hides a difference.
    expect(clientNameProblem('\u202eShop')).toMatch(/U\+202E/);
    expect(clientNameProblem('Sh\u200bop')).toMatch(/U\+200B/);
    expect(clientNameProblem('Shop\u2028Bank')).toMatch(/U\+2028/);
    expect(refusal({ name: 'Evil\u202e' })).toBe('client name "Evil\\u{202e}" contains U+202E, a control or invisible character');
  });
});

describe('new clients', () => {
  it('are confidential with a secret, or public without one; the request is copied', () => {
    const uris = ['https://rp.example/cb'];
    const confidential = newClient({ ...REQUEST, redirectUris: uris, name: 'Shop', postLogoutRedirectUris: ['https://rp.example/'] }, 1_700_000_000_123);
    expect(confidential).toMatchObject({
      tokenAuth: 'client_secret_basic',
      subjectType: 'public',
      idTokenAlg: 'EdDSA',
      name: 'Shop',
      redirectUris: uris,
      postLogoutRedirectUris: ['https://rp.example/'],
      createdAt: 1_700_000_000_123,
    });
    expect(confidential.redirectUris).not.toBe(uris);
    expect(confidential.clientSecret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(clientType(confidential)).toBe('confidential');

    const post = newClient({ ...REQUEST, tokenAuth: 'client_secret_post', idTokenAlg: 'ES256' }, 0);
    expect([post.tokenAuth, post.idTokenAlg, clientType(post)]).toEqual(['client_secret_post', 'ES256', 'confidential']);
    expect(post.clientSecret).not.toBeNull();

    const pub = newClient({ ...REQUEST, tokenAuth: 'none' }, 0);
    expect(pub.clientSecret).toBeNull();
    expect(clientType(pub)).toBe('public');
  });

  it('get 22-character base64url ids that never start with "-" (the CLI would read one as a flag), and 256-bit secrets', () => {
    const ids = Array.from({ length: 2000 }, () => newClientId());
    for (const id of ids) {
      expect(id).toMatch(/^[A-Za-z0-9_][A-Za-z0-9_-]{21}$/);
      expect(parseFlags('oidc', [], ['client', 'remove', id]).positionals).toEqual(['client', 'remove', id]);
    }
    expect(new Set(ids).size).toBe(ids.length);
    // A draw whose id would start with "-" (0xf8 >> 2 = 62, "-" in base64url) is drawn again.
    const draws = [Buffer.alloc(16, 0xf8), Buffer.alloc(16, 0x04)];
    const seen: number[] = [];
    expect(newClientId((n) => (seen.push(n), draws.shift()!))).toBe('BAQEBAQEBAQEBAQEBAQEBA');
    expect(seen).toEqual([16, 16]);
    const secrets = new Set(Array.from({ length: 200 }, () => newClientSecret()));
    expect(secrets.size).toBe(200);
    expect(newClientSecret(() => Buffer.alloc(32, 0xff))).toBe('_'.repeat(42) + '8');
    expect(newClientSecret(randomBytes)).toHaveLength(43);
  });
});

describe('the registration an operator pastes', () => {
  it('uses the Dynamic Client Registration names; a secret only for a confidential client; a name only when given', () => {
    const client = newClient({ ...REQUEST, name: 'Shop', postLogoutRedirectUris: ['https://rp.example/'], pairwise: true }, 1_700_000_000_999);
    expect(clientRegistration(client)).toEqual({
      client_id: client.clientId,
      client_secret: client.clientSecret,
      client_secret_expires_at: 0,
      client_id_issued_at: 1_700_000_000,
      client_name: 'Shop',
      redirect_uris: ['https://rp.example/callback'],
      post_logout_redirect_uris: ['https://rp.example/'],
      token_endpoint_auth_method: 'client_secret_basic',
      subject_type: 'pairwise',
      id_token_signed_response_alg: 'EdDSA',
    });
    const pub = clientRegistration(newClient({ ...REQUEST, tokenAuth: 'none' }, 0));
    expect(Object.keys(pub)).not.toContain('client_secret');
    expect(Object.keys(pub)).not.toContain('client_secret_expires_at');
    expect(Object.keys(pub)).not.toContain('client_name');
    expect(pub.token_endpoint_auth_method).toBe('none');
  });
});
