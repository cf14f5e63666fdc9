import { createPublicKey, verify } from 'node:crypto';
import canonicalize from 'canonicalize';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keysCommand, tokenCommand } from '../../src/cli/operator-commands.js';
import { fetchSignInfo, postDecision } from '../../src/cli/signer.js';
import { loadConfig } from '../../src/config/load.js';
import { privateKeyFromPem } from '../../src/identity/keys.js';
import type { QuickLoginResult } from '../../src/protocol/events.js';
import { postgresDatabase } from '../helpers/backends.js';
import { get, post, registered } from '../helpers/http.js';
import { makeIdentity, startService, type TestService } from '../helpers/service.js';
import { TestTab } from '../helpers/tab.js';

// Whole services on PostgreSQL (the cluster's store): a QR login end to end, and the key ring two nodes
// share: created once when they start together, published alike, and rotated through the CLI for both.

describe('a service on PostgreSQL', () => {
  let service: TestService;
  beforeAll(async () => {
    service = await startService({}, { databaseUrl: await postgresDatabase() });
  });
  afterAll(async () => service.close());

  it('runs a QR login from request to signature to the live tab, result signed with the published key', async () => {
    const ada = await makeIdentity(service, { FIRST: 'Ada', LAST: 'Lovelace', COUNTRY: 'GB' });
    const tab = await TestTab.open(service.wsUrl);
    await registered(service, tab.tabId);
    const qr = await post(service, '/QuickLogin', { mode: 'text', purpose: 'Log in on PostgreSQL', serviceId: '', tab: tab.tabId, agentApiTimeout: 1.5 }, { cookie: tab.cookie });
    expect(qr.status).toBe(200);
    // The code becomes a row when the signing app first fetches it (docs/signing.md "Derived codes"), stored
    // with the whole seconds the token will be issued for: PostgreSQL's integer columns refuse 1.5.
    const info = await fetchSignInfo(qr.body.signUrl);
    expect((await service.store.codes.get(qr.body.signUrl.split('/').at(-1)))!.agentApiTimeout).toBe(1);
    expect(info.purpose).toBe('Log in on PostgreSQL');
    const answer = await postDecision(qr.body.signUrl, info, ada.identity.id, privateKeyFromPem(ada.privateKeyPem), 'approve');
    expect(answer.state).toBe('approved');
    const result = (await tab.next('SignatureReceived')).data as QuickLoginResult;
    expect(result).toMatchObject({ Id: ada.identity.id, Purpose: 'Log in on PostgreSQL', Properties: { FIRST: 'Ada', LAST: 'Lovelace', COUNTRY: 'GB' } });
    const { body: jwks } = await get(service, '/.well-known/tabwire/result-keys');
    const { ServerSignature, ...unsigned } = result;
    expect(verify(null, Buffer.from(canonicalize(unsigned)!), createPublicKey({ key: jwks.keys[0], format: 'jwk' }), Buffer.from(ServerSignature, 'base64'))).toBe(true);
    // The second use of the code is refused: single use holds on PostgreSQL too.
    const again = await postDecision(qr.body.signUrl, info, ada.identity.id, privateKeyFromPem(ada.privateKeyPem), 'approve').catch((err: Error) => err);
    expect(again).toBeInstanceOf(Error);
    tab.close();
  });
});

describe('two nodes on one PostgreSQL database', () => {
  let url: string;
  let nodes: TestService[];
  beforeAll(async () => {
    url = await postgresDatabase();
    // Started together: each finds the key rings empty and races to create the first keys.
    // One public URL for both, as behind a load balancer (token issuer, signUrls).
    const publicBaseUrl = 'http://127.0.0.1:8080';
    // The real clock: the CLI signs with it, and a token dated after a node's (test) clock would not be valid yet there.
    nodes = await Promise.all([0, 1].map(() => startService({ openRegistration: true, publicBaseUrl }, { databaseUrl: url, realClock: true })));
  });
  afterAll(async () => Promise.all(nodes.map((n) => n.close())));

  const published = async (node: TestService, path: string) => {
    const answer = await get(node, path);
    expect(answer.status).toBe(200);
    return answer.body;
  };

  it('create one result key, one token key and one development identity between them, and publish the same sets', async () => {
    for (const purpose of ['result', 'jwt', 'dev-identity']) expect(await nodes[0]!.store.serverKeys.list(purpose)).toHaveLength(1);
    expect(nodes[0]!.app.tabwire.signer.kid).toBe(nodes[1]!.app.tabwire.signer.kid);
    expect(await published(nodes[1]!, '/.well-known/tabwire/result-keys')).toEqual(await published(nodes[0]!, '/.well-known/tabwire/result-keys'));
    expect(await published(nodes[1]!, '/.well-known/tabwire/webhook-key')).toEqual(await published(nodes[0]!, '/.well-known/tabwire/webhook-key'));
    expect((await published(nodes[0]!, '/.well-known/jwks.json')).keys).toHaveLength(1);
    expect(await published(nodes[1]!, '/.well-known/jwks.json')).toEqual(await published(nodes[0]!, '/.well-known/jwks.json'));
  });

  it('a token issued by one node verifies on the other', async () => {
    expect((await post(nodes[0]!, '/Agent/Account/Create', { userName: 'grace', password: 'long enough password' })).status).toBe(201);
    const login = await post(nodes[0]!, '/Agent/Account/Login', { userName: 'grace', password: 'long enough password', seconds: 600 });
    expect(login.status).toBe(200);
    const info = await get(nodes[1]!, '/Agent/Account/Info', { authorization: `Bearer ${login.body.jwt}` });
    expect(info.body).toMatchObject({ userName: 'grace' });
  });

  it('two nodes taking a signature of one code at once: exactly one 200, the other 409', async () => {
    const ada = await makeIdentity(nodes[0]!, { FIRST: 'Ada' });
    const key = privateKeyFromPem(ada.privateKeyPem);
    for (let round = 0; round < 5; round++) {
      const qr = await post(nodes[0]!, '/QuickLogin', { mode: 'text', purpose: `Race ${round}`, serviceId: '', tab: '' });
      expect(qr.status).toBe(200);
      const path = new URL(qr.body.signUrl).pathname;
      // What the signing app is shown (its challenge names the public host, which both nodes serve).
      const info = (await get(nodes[1]!, path, { accept: 'application/json' })).body;
      const answers = await Promise.all(
        nodes.map((node) => postDecision(node.baseUrl + path, info, ada.identity.id, key, 'approve').then(() => 200, (err: { status?: number }) => err.status)),
      );
      expect([...answers].sort()).toEqual([200, 409]);
    }
  });

  it('a key rotated through the CLI verifies on both nodes at once, and both publish it', async () => {
    // The CLI opens the store from the same configuration as the nodes (databaseUrl).
    const config = loadConfig({}, { databaseUrl: url, logLevel: 'silent', publicBaseUrl: nodes[0]!.publicBaseUrl });
    const kid = (await keysCommand(config, 'rotate')).split('\t')[0]!;
    // `tabwire token` signs with the ring's newest key: the one just rotated in, which no node has loaded yet.
    const jwt = (await tokenCommand(config, 'grace', 600)).split('\n')[0]!;
    expect(JSON.parse(Buffer.from(jwt.split('.')[0]!, 'base64url').toString()).kid).toBe(kid);
    for (const node of nodes) {
      const info = await get(node, '/Agent/Account/Info', { authorization: `Bearer ${jwt}` });
      expect(info.status).toBe(200);
      const jwks = await published(node, '/.well-known/jwks.json');
      expect(jwks.keys.map((k: { kid: string }) => k.kid)).toEqual([kid, expect.any(String)]);
    }
    // Tokens of the older key keep verifying.
    const login = await post(nodes[1]!, '/Agent/Account/Login', { userName: 'grace', password: 'long enough password', seconds: 600 });
    expect((await get(nodes[0]!, '/Agent/Account/Info', { authorization: `Bearer ${login.body.jwt}` })).status).toBe(200);
  });
});
