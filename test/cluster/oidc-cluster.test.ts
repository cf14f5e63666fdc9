import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readKeyFile } from '../../src/identity/key-file.js';
import type { OidcClient } from '../../src/store/oidc-store.js';
import { Cluster } from '../helpers/cluster.js';
import { on } from '../helpers/cluster-flows.js';
import { approve, authorize, complete, CookieJar, exchange, followToRp, interactionUid, loginPageCode, pkce } from '../helpers/oidc-flow.js';

/**
 * The OpenID Provider on three nodes (dist/main.js processes) on one PostgreSQL database and one Redis, no
 * sticky sessions (docs/oidc.md "Cluster"): every step of a login may reach another node, and a code is
 * exchanged once however many nodes are asked. The nodes' publicBaseUrl is the balancer's, as in a
 * deployment, so they share one issuer; the test names the node of every request. The signing app goes
 * through the balancer (the challenge it signs names the service's public host), which sends it to the
 * node the test picks.
 */

let cluster: Cluster;
let keyDir: string;
let signer: ReturnType<typeof readKeyFile>;
let client: Pick<OidcClient, 'clientId' | 'clientSecret' | 'redirectUris'>;
const REDIRECT = 'https://shop.example/cb';
/** The node (from 1) the balancer sends the signing app's requests to. */
let signNode = 2;

beforeAll(async () => {
  cluster = await Cluster.start({ nodes: 3, balanced: { route: (path) => (path.startsWith('/QuickLogin/Sign/') ? signNode - 1 : undefined) } });
  keyDir = mkdtempSync(join(tmpdir(), 'tabwire-oidc-cluster-'));
  const keyFile = join(keyDir, 'ada.key');
  await cluster.cli(['identity', 'create', '--prop', 'FIRST=Ada', '--prop', 'EMAIL=ada@example.org', '--key-out', keyFile, '--approve']);
  signer = readKeyFile(keyFile);
  const registration = JSON.parse(await cluster.cli(['oidc', 'client', 'add', '--name', 'Cluster Shop', '--redirect-uri', REDIRECT])) as { client_id: string; client_secret: string };
  client = { clientId: registration.client_id, clientSecret: registration.client_secret, redirectUris: [REDIRECT] };
  // Three nodes and two CLI runs took 90 s on one busy core; the limit only bounds a broken start.
}, 240_000);
afterAll(async () => {
  await cluster?.stop();
  if (keyDir) rmSync(keyDir, { recursive: true, force: true });
});

/** Node n (from 1, as the test names read). */
const node = (n: number): string => cluster.url(n - 1);

interface Steps {
  authorize: number;
  /** The login page, its tab (event channel) and its QR request. */
  page: number;
  /** The signing app's fetch and approval. */
  sign: number;
  complete: number;
  resume: number;
}

/** A login whose steps go to the nodes named; resolves with the code at the relying party and its verifier. */
async function loginToCode(steps: Steps): Promise<{ code: string; verifier: string; nonce: string }> {
  const origin = cluster.entryUrl;
  const jar = new CookieJar();
  const { verifier, challenge } = pkce();
  const nonce = `n-${Math.random().toString(36).slice(2)}`;
  const started = await authorize(node(steps.authorize), jar, { client: client as OidcClient, challenge, nonce, scope: 'openid profile email' });
  expect(started.status).toBe(303);
  const uid = interactionUid(started.headers.get('location')!);
  const { tab, signUrl, status, body } = await loginPageCode(node(steps.page), cluster.wsUrl(steps.page - 1), jar, uid, origin);
  expect({ status, body }).toMatchObject({ status: 200, body: { signUrl: expect.any(String) } });
  try {
    signNode = steps.sign;
    const { info, answer } = await approve(on(cluster.entryUrl, signUrl), signer.legalId, signer.key);
    expect(info.purpose).toBe('Log in to Cluster Shop');
    expect(answer.state).toBe('approved');
    const signPath = new URL(signUrl).pathname;
    expect(cluster.balancer!.log.filter((e) => e.path === signPath).map((e) => e.target + 1)).toEqual([steps.sign, steps.sign]);
    await tab.next('SignatureReceived');
    const done = await complete(node(steps.complete), jar, uid, tab.tabId, origin);
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    const back = await followToRp(node(steps.resume), jar, done.body.redirectTo!);
    expect(`${back.origin}${back.pathname}`).toBe(REDIRECT);
    return { code: back.searchParams.get('code')!, verifier, nonce };
  } finally {
    tab.ws.close();
  }
}

const exchangeOn = (n: number, login: { code: string; verifier: string }) =>
  exchange(node(n), client, { code: login.code, redirect_uri: REDIRECT, code_verifier: login.verifier });

describe('OpenID Connect login across three nodes', () => {
  it('authorize on 1, page, QR and approval on 2, completion on 3, resume on 1, tokens on 3: the ID token verifies against node 1\'s JWKS; a replay on node 1 is invalid_grant and revokes its tokens', async () => {
    const login = await loginToCode({ authorize: 1, page: 2, sign: 2, complete: 3, resume: 1 });
    const tokens = await exchangeOn(3, login);
    expect(tokens.status, JSON.stringify(tokens.body)).toBe(200);
    const jwks = createRemoteJWKSet(new URL(`${node(1)}/oidc/jwks`));
    const { payload } = await jwtVerify(String(tokens.body.id_token), jwks, { issuer: `${cluster.entryUrl}/oidc`, audience: client.clientId });
    expect(payload).toMatchObject({ sub: signer.legalId, nonce: login.nonce, given_name: 'Ada', email: 'ada@example.org' });
    // The access token issued by node 3 is good on node 2.
    const userinfo = await fetch(`${node(2)}/oidc/me`, { headers: { authorization: `Bearer ${String(tokens.body.access_token)}` } });
    expect(userinfo.status).toBe(200);
    expect(await userinfo.json()).toMatchObject({ sub: signer.legalId, given_name: 'Ada' });

    const replay = await exchangeOn(1, login);
    expect([replay.status, replay.body.error]).toEqual([400, 'invalid_grant']);
    // A replayed code revokes what it was exchanged for (RFC 6749 §4.1.2), on every node: node 2 refuses the token now.
    const revoked = await fetch(`${node(2)}/oidc/me`, { headers: { authorization: `Bearer ${String(tokens.body.access_token)}` } });
    expect(revoked.status).toBe(401);
  });

  it('a code exchanged at the same moment on nodes 2 and 3 succeeds on exactly one, each time', async () => {
    for (let round = 0; round < 5; round++) {
      const login = await loginToCode({ authorize: 3, page: 1, sign: 3, complete: 2, resume: 3 });
      const answers = await Promise.all([exchangeOn(2, login), exchangeOn(3, login)]);
      expect(answers.map((a) => a.status).sort(), `round ${round}: ${JSON.stringify(answers.map((a) => a.body))}`).toEqual([200, 400]);
      expect(answers.find((a) => a.status === 400)!.body.error).toBe('invalid_grant');
      expect(answers.find((a) => a.status === 200)!.body.id_token).toEqual(expect.any(String));
    }
  });
});
