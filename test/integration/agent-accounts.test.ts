import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../../src/agent/api-keys.js';
import { rotateTokenKey } from '../../src/agent/tokens.js';
import { get, post, type Answer } from '../helpers/http.js';
import { startService, type TestService } from '../helpers/service.js';

let service: TestService;
let apiKey: string;

beforeAll(async () => {
  service = await startService();
  apiKey = (await createApiKey(service.store.apiKeys, service.clock, 'tests')).key;
});
afterAll(async () => service.close());

const create = (userName: string, password = 'correct horse battery', key: string | null = apiKey) =>
  post(service, '/Agent/Account/Create', { userName, password }, key === null ? {} : { 'x-api-key': key });
const login = (userName: string, password = 'correct horse battery', seconds = 600) => post(service, '/Agent/Account/Login', { userName, password, seconds });
const info = (jwt: string | undefined) => get(service, '/Agent/Account/Info', jwt === undefined ? {} : { authorization: `Bearer ${jwt}` });

function expectRefused(answer: Answer, status: number, code: string): void {
  expect(answer.status).toBe(status);
  expect(answer.contentType).toContain('application/problem+json');
  expect(answer.body.code).toBe(code);
}

const b64 = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
const parts = (jwt: string) => jwt.split('.') as [string, string, string];
const decode = (part: string) => JSON.parse(Buffer.from(part, 'base64url').toString());

describe('agent accounts', () => {
  it('create needs an operator API key; a taken name is refused', async () => {
    expectRefused(await create('nokey', 'correct horse battery', null), 401, 'api_key_missing');
    expectRefused(await create('badkey', 'correct horse battery', 'twk_nope'), 403, 'api_key_invalid');
    expect((await create('alice')).status).toBe(201);
    expectRefused(await create('alice'), 409, 'account_exists');
    expectRefused(await create('Not A Name'), 400, 'validation_failed');
  });

  it('create -> login -> refresh -> protected route; the old token works until it expires', async () => {
    await create('bob');
    const first = await login('bob', 'correct horse battery', 60);
    expect(first.status).toBe(200);
    expect(first.body.expires).toBe(Math.floor(service.clock.now() / 1000) + 60);
    expect((await info(first.body.jwt)).body).toMatchObject({ userName: 'bob' });

    const refreshed = await post(service, '/Agent/Account/Refresh', { seconds: 7200 }, { authorization: `Bearer ${first.body.jwt}` });
    expect(refreshed.status).toBe(200);
    expect(refreshed.body.expires).toBe(Math.floor(service.clock.now() / 1000) + 3600); // clamped
    expect((await info(refreshed.body.jwt)).status).toBe(200);
    expect((await info(first.body.jwt)).status).toBe(200);

    service.clock.advance(61_000);
    expectRefused(await info(first.body.jwt), 401, 'token_expired');
    expect((await info(refreshed.body.jwt)).status).toBe(200);
  });

  it('after keys rotate, new tokens carry the new kid and old ones still verify', async () => {
    await create('carol');
    const before = await login('carol');
    await rotateTokenKey(service.store.serverKeys, service.clock);
    await service.app.tabwire.tokens.reload(); // what the service's minute timer does
    const after = await login('carol');
    const oldKid = decode(parts(before.body.jwt)[0]).kid;
    const newKid = decode(parts(after.body.jwt)[0]).kid;
    expect(newKid).not.toBe(oldKid);
    expect((await info(before.body.jwt)).status).toBe(200);
    expect((await info(after.body.jwt)).status).toBe(200);
    const jwks = await get(service, '/.well-known/jwks.json');
    expect(jwks.body.keys.map((k: { kid: string }) => k.kid)).toEqual(expect.arrayContaining([oldKid, newKid]));
    expect(jwks.body.keys.every((k: { kty: string; crv: string; d?: string }) => k.kty === 'OKP' && k.crv === 'Ed25519' && k.d === undefined)).toBe(true);
  });
});

describe('the bearer guard refuses', () => {
  let jwt: string;
  beforeAll(async () => {
    await create('dave');
    jwt = (await login('dave')).body.jwt;
  });

  it('a missing or malformed Authorization header', async () => {
    const missing = await info(undefined);
    expectRefused(missing, 401, 'token_missing');
    expect(missing.headers.get('www-authenticate')).toContain('Bearer');
    expectRefused(await get(service, '/Agent/Account/Info', { authorization: `Basic ${jwt}` }), 401, 'token_malformed');
    expectRefused(await info('not-a-jwt'), 401, 'token_malformed');
  });

  it('alg none, and HS256 signed with the public key as the secret', async () => {
    const [header, payload] = parts(jwt);
    const none = `${b64({ ...decode(header), alg: 'none' })}.${payload}.`;
    expectRefused(await info(none), 401, 'token_algorithm_not_allowed');
    const jwk = (await get(service, '/.well-known/jwks.json')).body.keys[0];
    const hsHeader = b64({ alg: 'HS256', typ: 'JWT', kid: jwk.kid });
    for (const secret of [JSON.stringify(jwk), jwk.x]) {
      const signature = createHmac('sha256', secret).update(`${hsHeader}.${payload}`).digest('base64url');
      expectRefused(await info(`${hsHeader}.${payload}.${signature}`), 401, 'token_algorithm_not_allowed');
    }
  });

  it('an expired token, and one not valid yet', async () => {
    const short = (await login('dave', 'correct horse battery', 30)).body.jwt;
    service.clock.advance(-120_000);
    expectRefused(await info(short), 401, 'token_not_yet_valid');
    service.clock.advance(120_000 + 31_000);
    expectRefused(await info(short), 401, 'token_expired');
  });

  it('a wrong kid, a tampered payload, and a deleted account', async () => {
    const fresh = (await login('dave')).body.jwt;
    const [header, payload, signature] = parts(fresh);
    expectRefused(await info(`${b64({ ...decode(header), kid: 'no-such-kid' })}.${payload}.${signature}`), 401, 'token_key_unknown');
    const tampered = b64({ ...decode(payload), preferred_username: 'alice' });
    expectRefused(await info(`${header}.${tampered}.${signature}`), 401, 'token_signature_invalid');
    const account = await service.store.accounts.byUserName('dave');
    await service.store.accounts.delete(account!.id);
    expectRefused(await info(fresh), 401, 'token_account_unknown');
  });
});

describe('login brute force', () => {
  it('the 6th failure within a minute answers 429 with Retry-After; the right password works after the window', async () => {
    await create('erin');
    for (let i = 0; i < 5; i++) expectRefused(await login('erin', 'wrong password'), 401, 'credentials_invalid');
    const sixth = await login('erin', 'wrong password');
    expectRefused(sixth, 429, 'rate_limited');
    expect(Number(sixth.headers.get('retry-after'))).toBeGreaterThan(0);
    expectRefused(await login('erin'), 429, 'rate_limited');
    service.clock.advance(60_000);
    expect((await login('erin')).status).toBe(200);
  });

  it('a wrong user name and a wrong password get the same answer', async () => {
    const unknown = await login('nobody-here', 'whatever password');
    const wrong = await login('alice', 'whatever password');
    expect(unknown.body).toEqual(wrong.body);
  });
});
