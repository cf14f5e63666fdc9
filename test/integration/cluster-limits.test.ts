import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify, { type FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Accounts } from '../../src/agent/accounts.js';
import { TokenService } from '../../src/agent/tokens.js';
import { createLimits } from '../../src/wiring/shared.js';
import { systemClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config/load.js';
import { registerProblemHandlers } from '../../src/http/problem.js';
import { registerRequestLimits, type RequestLimitName } from '../../src/http/request-limits.js';
import type { RedisConnection } from '../../src/redis/connection.js';
import { openSqliteStore } from '../../src/store/sqlite/open.js';
import type { Store } from '../../src/store/stores.js';
import { startRedis, testConnection, testPrefix } from '../helpers/redis.js';
import { until } from '../helpers/until.js';

const silent = pino({ level: 'silent' });
const config = loadConfig({}, { qrRequestsPerAddressPerMinute: 6, registrationsPerAddressPerMinute: 4, loginAttemptsPerAccount: 3, logLevel: 'silent' });

/** A node's HTTP face for the request limits: POST /qr and /registration count as POST /QuickLogin does. */
async function limitedApp(redis: RedisConnection | undefined, limited: RequestLimitName[]): Promise<FastifyInstance> {
  const app = Fastify({ logger: false });
  registerProblemHandlers(app);
  const { rateLimitStore } = createLimits({ redis, clock: systemClock, log: silent }, config);
  const limits = await registerRequestLimits(app, {
    qrPerSessionPerMinute: config.qrRequestsPerSessionPerMinute,
    qrPerAddressPerMinute: config.qrRequestsPerAddressPerMinute,
    registrationsPerAddressPerMinute: config.registrationsPerAddressPerMinute,
    oidcTokenPerAddressPerMinute: config.oidcTokenRequestsPerAddressPerMinute,
    onLimited: (name) => limited.push(name),
    ...(rateLimitStore ? { store: rateLimitStore } : {}),
  });
  app.post('/qr', async (request) => (await limits.qr(request, null), {}));
  app.post('/registration', async (request) => (await limits.registration(request), {}));
  await app.ready();
  return app;
}

const hit = async (app: FastifyInstance, path: string, ip = '203.0.113.7') => (await app.inject({ method: 'POST', url: path, remoteAddress: ip })).statusCode;

describe('request rate limits across two nodes on one Redis', () => {
  const connections: RedisConnection[] = [];
  const apps: FastifyInstance[] = [];
  afterAll(async () => {
    await Promise.all(apps.map((a) => a.close()));
    await Promise.all(connections.map((c) => c.close()));
  });

  it('the per-address QR limit is the limit across nodes, not 2 × it; 429 is problem+json with Retry-After', async () => {
    const prefix = testPrefix('rate');
    connections.push(testConnection(inject('redisUrl'), prefix), testConnection(inject('redisUrl'), prefix));
    const limited: RequestLimitName[] = [];
    const [a, b] = [await limitedApp(connections[0], limited), await limitedApp(connections[1], limited)];
    apps.push(a, b);
    const statuses = [];
    for (let i = 0; i < 10; i++) statuses.push(await hit(i % 2 ? a : b, '/qr'));
    expect(statuses.filter((s) => s === 200)).toHaveLength(6);
    expect(statuses.slice(6)).toEqual([429, 429, 429, 429]);
    const refused = await a.inject({ method: 'POST', url: '/qr', remoteAddress: '203.0.113.7' });
    expect(refused.headers['content-type']).toContain('application/problem+json');
    expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(refused.json()).toMatchObject({ code: 'rate_limited', limit: 'qr_address' });
    expect(limited.every((l) => l === 'qr_address')).toBe(true);
    // Another address, and the registration limit of the same address, are counted apart.
    expect(await hit(b, '/qr', '203.0.113.8')).toBe(200);
    for (let i = 0; i < 4; i++) expect(await hit(i % 2 ? a : b, '/registration')).toBe(200);
    expect(await hit(a, '/registration')).toBe(429);
    // IPv6: one /64 is one client.
    expect(await hit(a, '/registration', '2001:db8:1:2::1')).toBe(200);
    for (let i = 0; i < 3; i++) expect(await hit(b, '/registration', `2001:db8:1:2::${i + 2}`)).toBe(200);
    expect(await hit(a, '/registration', '2001:db8:1:2:ffff::9')).toBe(429);
  });

  it('while Redis is down each node counts on its own: requests are neither refused for Redis\'s sake nor unlimited', async () => {
    const server = await startRedis();
    const prefix = testPrefix('rate-outage');
    const redis = testConnection(server.url, prefix);
    connections.push(redis);
    const app = await limitedApp(redis, []);
    apps.push(app);
    try {
      expect(await hit(app, '/qr')).toBe(200);
      await server.stopServer();
      await until(() => redis.down, 'the connection to notice');
      const statuses = [];
      for (let i = 0; i < 8; i++) statuses.push(await hit(app, '/qr'));
      expect(statuses).toEqual([200, 200, 200, 200, 200, 200, 429, 429]);
    } finally {
      await server.stop();
    }
  });
});

describe('login throttle across two nodes on one Redis', () => {
  let dir: string;
  let store: Store;
  const connections: RedisConnection[] = [];
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tabwire-cluster-limits-'));
    store = await openSqliteStore(join(dir, 'tabwire.sqlite'));
  });
  afterAll(async () => {
    await Promise.all(connections.map((c) => c.close()));
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('failed logins on node A count on node B: the account limit is the limit, and a reset on one node opens it on both', async () => {
    const prefix = testPrefix('login');
    const tokens = await TokenService.load(store.serverKeys, systemClock, 'http://127.0.0.1:1');
    const node = () => {
      const redis = testConnection(inject('redisUrl'), prefix);
      connections.push(redis);
      const { accountThrottle, addressThrottle } = createLimits({ redis, clock: systemClock, log: silent }, config);
      return new Accounts({ accounts: store.accounts, tokens, clock: systemClock, accountThrottle, addressThrottle });
    };
    const [a, b] = [node(), node()];
    await a.create({ userName: 'frank', password: 'correct horse battery' });
    const login = (accounts: Accounts, password: string) =>
      accounts.login({ userName: 'frank', password, seconds: 60 }, '198.51.100.1').then(
        () => 200,
        (err: { status?: number; statusCode?: number }) => err.status ?? err.statusCode,
      );
    const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => login(i % 2 ? a : b, 'wrong password')));
    expect(answers.filter((s) => s === 401)).toHaveLength(3);
    expect(answers.filter((s) => s === 429)).toHaveLength(9);
    expect(await login(a, 'correct horse battery')).toBe(429);
    // The window is shared: clearing it (as a correct password would on any node) opens it on both.
    await createLimits({ redis: connections[0], clock: systemClock, log: silent }, config).accountThrottle.reset('account:frank');
    expect(await login(b, 'correct horse battery')).toBe(200);
    expect(await login(a, 'wrong password')).toBe(401);
  });
});
