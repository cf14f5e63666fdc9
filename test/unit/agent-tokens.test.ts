import { randomUUID } from 'node:crypto';
import Fastify from 'fastify';
import { SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import { rotateTokenKey, TokenService } from '../../src/agent/tokens.js';
import { ManualClock } from '../../src/clock.js';
import { TabwireError } from '../../src/errors.js';
import { bearerGuard } from '../../src/http/bearer.js';
import { registerProblemHandlers } from '../../src/http/problem.js';
import { generateEd25519, privateKeyFromPem } from '../../src/identity/keys.js';
import type { AccountStore, ServerKey, ServerKeyStore } from '../../src/store/stores.js';

const ISSUER = 'https://tabwire.test';

/** An in-memory key store that counts reads, can fail, and can hold reads until the test lets them go. */
class FakeKeys implements ServerKeyStore {
  rows: ServerKey[] = [];
  reads = 0;
  failing = false;
  private gate: Promise<void> | undefined;
  private open: (() => void) | undefined;

  async list(purpose: string): Promise<ServerKey[]> {
    this.reads++;
    // A read sees the rows as they were when it started, as a database snapshot would.
    // Newest first in ring order (the order keys were added), as the SQL store keeps it.
    const snapshot = this.rows.filter((k) => k.purpose === purpose).reverse();
    if (this.gate) await this.gate;
    if (this.failing) throw new Error('disk I/O error');
    return snapshot;
  }
  async insert(key: ServerKey): Promise<void> {
    if (!this.rows.some((k) => k.kid === key.kid)) this.rows.push(key);
  }
  async insertFirst(key: ServerKey): Promise<boolean> {
    if (this.rows.some((k) => k.purpose === key.purpose || k.kid === key.kid)) return false;
    this.rows.push(key);
    return true;
  }
  hold(): void {
    this.gate = new Promise((resolve) => (this.open = resolve));
  }
  release(): void {
    this.gate = undefined;
    this.open?.();
  }
}

async function setup() {
  const clock = new ManualClock(1_700_000_000_000);
  const keys = new FakeKeys();
  const tokens = await TokenService.load(keys, clock, ISSUER);
  const account = { id: randomUUID(), userName: 'ada' };
  return { clock, keys, tokens, account };
}

const strangerKey = privateKeyFromPem(generateEd25519().privateKeyPem);

/** A well-formed EdDSA token naming `kid`, signed by a key the service has never seen. */
async function tokenWithKid(kid: string, clock: ManualClock): Promise<string> {
  const now = Math.floor(clock.now() / 1000);
  return new SignJWT({ preferred_username: 'ada' })
    .setProtectedHeader({ alg: 'EdDSA', kid })
    .setIssuer(ISSUER)
    .setAudience('tabwire-agent-api')
    .setSubject('someone')
    .setIssuedAt(now)
    .setNotBefore(now)
    .setExpirationTime(now + 60)
    .sign(strangerKey);
}

async function refusal(promise: Promise<unknown>): Promise<TabwireError> {
  const err = await promise.then(() => undefined, (e: unknown) => e);
  expect(err).toBeInstanceOf(TabwireError);
  return err as TabwireError;
}

describe('TokenService key ring', () => {
  it('a key rotated by another process verifies at once, with no clock movement (was refused for 5 s)', async () => {
    const { clock, keys, tokens, account } = await setup();
    // What `tabwire keys rotate` then `tabwire token` do in another process on the same store.
    // The CLI's key is the newest (1 ms later); the service's own clock does not move.
    const newKid = await rotateTokenKey(keys, new ManualClock(clock.now() + 1));
    const cli = await TokenService.load(keys, clock, ISSUER);
    const { jwt } = await cli.issue(account, 120);
    expect(JSON.parse(Buffer.from(jwt.split('.')[0]!, 'base64url').toString()).kid).toBe(newKid);
    expect((await tokens.verify(jwt)).accountId).toBe(account.id);
  });

  it('an unknown kid refused a moment ago does not hide a key stored since a read already under way', async () => {
    const { clock, keys, tokens, account } = await setup();
    keys.hold();
    const periodic = tokens.reload(); // started before the key exists
    await rotateTokenKey(keys, new ManualClock(clock.now() + 1));
    const { jwt } = await (await loadWithoutGate(keys, clock)).issue(account, 60);
    const verified = tokens.verify(jwt);
    await loopTurn(); // the verify now waits behind the read under way
    keys.release();
    await periodic;
    expect((await verified).accountId).toBe(account.id);
  });

  it('a flood of unknown kids: one read at a time, one per distinct kid, none for a kid refused within the window', async () => {
    const { clock, keys, tokens } = await setup();
    const before = keys.reads;
    keys.hold();
    const flood = await Promise.all(Array.from({ length: 200 }, (_, i) => tokenWithKid(`flood-${i}`, clock)));
    const refused = Promise.all(flood.map((jwt) => refusal(tokens.verify(jwt))));
    // Key lookup happens in microtasks, so after one loop turn every verify waits on the held read.
    await loopTurn();
    expect(keys.reads - before).toBe(1);
    keys.release();
    for (const err of await refused) expect(err.code).toBe('token_key_unknown');
    // The first read started at once; every later caller shared the one read queued behind it.
    expect(keys.reads - before).toBeLessThanOrEqual(2);

    const again = keys.reads;
    for (const jwt of flood.slice(0, 50)) expect((await refusal(tokens.verify(jwt))).code).toBe('token_key_unknown');
    expect(keys.reads).toBe(again);

    clock.advance(60_000);
    expect((await refusal(tokens.verify(flood[0]!))).code).toBe('token_key_unknown');
    expect(keys.reads).toBe(again + 1);
  });

  it('remembers a bounded number of unknown kids: the oldest is forgotten first', async () => {
    const { clock, keys, tokens } = await setup();
    const first = await tokenWithKid('kid-0', clock);
    await refusal(tokens.verify(first));
    for (let i = 1; i <= 1024; i++) await refusal(tokens.verify(await tokenWithKid(`kid-${i}`, clock)));
    const reads = keys.reads;
    await refusal(tokens.verify(await tokenWithKid('kid-1024', clock))); // newest: still remembered
    expect(keys.reads).toBe(reads);
    await refusal(tokens.verify(first)); // oldest: pushed out, so it costs a read again
    expect(keys.reads).toBe(reads + 1);
  });

  it('a kid that cannot be one of ours is refused without a read', async () => {
    const { clock, keys, tokens } = await setup();
    const reads = keys.reads;
    expect((await refusal(tokens.verify(await tokenWithKid('x'.repeat(65), clock)))).code).toBe('token_key_unknown');
    expect((await refusal(tokens.verify(await tokenWithKid('not a kid', clock)))).code).toBe('token_key_unknown');
    expect(keys.reads).toBe(reads);
  });

  it('a store error while looking up an unknown kid is 503 store_unavailable with Retry-After, not 401', async () => {
    const { clock, keys, tokens, account } = await setup();
    const known = (await tokens.issue(account, 60)).jwt;
    keys.failing = true;
    const err = await refusal(tokens.verify(await tokenWithKid('some-kid', clock)));
    expect(err.code).toBe('store_unavailable');
    expect(err.status).toBe(503);
    expect(err.extra.retryAfter).toBe(1);
    // A failed read remembers nothing: the same kid asks the store again once it is back.
    keys.failing = false;
    expect((await refusal(tokens.verify(await tokenWithKid('some-kid', clock)))).code).toBe('token_key_unknown');
    // Tokens of known keys never needed the store.
    keys.failing = true;
    expect((await tokens.verify(known)).accountId).toBe(account.id);
  });

  it('over HTTP the store error is a 503 problem+json with Retry-After', async () => {
    const { clock, keys, tokens } = await setup();
    const app = Fastify();
    registerProblemHandlers(app);
    app.get('/protected', { preHandler: bearerGuard(tokens, {} as AccountStore) }, async () => ({}));
    keys.failing = true;
    const answer = await app.inject({ url: '/protected', headers: { authorization: `Bearer ${await tokenWithKid('some-kid', clock)}` } });
    expect(answer.statusCode).toBe(503);
    expect(answer.headers['content-type']).toContain('application/problem+json');
    expect(answer.headers['retry-after']).toBe('1');
    expect(answer.json()).toMatchObject({ status: 503, code: 'store_unavailable' });
    await app.close();
  });
});

describe('TokenService claims', () => {
  /** A token signed with the service's own key, with the given iat/nbf offsets from now. */
  async function signed(keys: FakeKeys, clock: ManualClock, iatOffset: number, nbfOffset = 0): Promise<string> {
    const [key] = await keys.list('jwt');
    const now = Math.floor(clock.now() / 1000);
    return new SignJWT({ preferred_username: 'ada' })
      .setProtectedHeader({ alg: 'EdDSA', kid: key!.kid })
      .setIssuer(ISSUER)
      .setAudience('tabwire-agent-api')
      .setSubject('someone')
      .setIssuedAt(now + iatOffset)
      .setNotBefore(now + nbfOffset)
      .setExpirationTime(now + 600)
      .sign(privateKeyFromPem(key!.privateKey));
  }

  it('a token whose iat is in the future is refused as token_not_yet_valid (jose checks iat only with maxTokenAge)', async () => {
    const { clock, keys, tokens } = await setup();
    expect((await refusal(tokens.verify(await signed(keys, clock, 1)))).code).toBe('token_not_yet_valid');
    expect((await refusal(tokens.verify(await signed(keys, clock, 3600)))).code).toBe('token_not_yet_valid');
    expect((await tokens.verify(await signed(keys, clock, 0))).accountId).toBe('someone');
  });

  it('a token issued longer ago than the longest lifetime is expired, whatever its exp says', async () => {
    const { clock, keys, tokens } = await setup();
    expect((await tokens.verify(await signed(keys, clock, -3600, -3600))).accountId).toBe('someone');
    expect((await refusal(tokens.verify(await signed(keys, clock, -3601, -3601)))).code).toBe('token_expired');
  });
});

const loopTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A second service instance (like the CLI) that does not wait on the gate of `keys`. */
async function loadWithoutGate(keys: FakeKeys, clock: ManualClock): Promise<TokenService> {
  const copy = new FakeKeys();
  copy.rows = [...keys.rows];
  return TokenService.load(copy, clock, ISSUER);
}
