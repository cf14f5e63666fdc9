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
import { shareOf } from '../../src/rate-limit/share-ledger.js';
import type { RedisConnection } from '../../src/redis/connection.js';
import { openSqliteStore } from '../../src/store/sqlite/open.js';
import type { Store } from '../../src/store/stores.js';
import { startRedis, testConnection, testPrefix } from '../helpers/redis.js';
import { until } from '../helpers/until.js';

const silent = pino({ level: 'silent' });
const config = loadConfig({}, { qrRequestsPerAddressPerMinute: 6, registrationsPerAddressPerMinute: 4, loginAttemptsPerAccount: 3, logLevel: 'silent' });

/** A node's HTTP face for the request limits: POST /qr and /registration count as POST /QuickLogin does. */
interface LimitedNode {
  app: FastifyInstance;
  /** Pushes the node's QR counts now (the background does it every `rateLimitSyncMs`). */
  sync(): Promise<void>;
  stop(): void;
}

async function limitedNode(redis: RedisConnection | undefined, limited: RequestLimitName[], cfg = config): Promise<LimitedNode> {
  const app = Fastify({ logger: false });
  registerProblemHandlers(app);
  const limits = createLimits({ redis, clock: systemClock, log: silent }, cfg);
  const requestLimits = await registerRequestLimits(app, {
    qrPerSessionPerMinute: cfg.qrRequestsPerSessionPerMinute,
    qrPerAddressPerMinute: cfg.qrRequestsPerAddressPerMinute,
    registrationsPerAddressPerMinute: cfg.registrationsPerAddressPerMinute,
    oidcTokenPerAddressPerMinute: cfg.oidcTokenRequestsPerAddressPerMinute,
    onLimited: (name) => limited.push(name),
    ...(limits.rateLimitStore ? { store: limits.rateLimitStore } : {}),
  });
  // A session (as POST /QuickLogin's cookie hash) when the request names one.
  app.post('/qr', async (request) => (await requestLimits.qr(request, (request.headers['x-session'] as string | undefined) ?? null), {}));
  app.post('/registration', async (request) => (await requestLimits.registration(request), {}));
  await app.ready();
  return { app, sync: limits.syncRateLimits, stop: limits.stop };
}

const limitedApp = async (redis: RedisConnection | undefined, limited: RequestLimitName[]) => (await limitedNode(redis, limited)).app;

const hit = async (app: FastifyInstance, path: string, ip = '203.0.113.7', session?: string) =>
  (await app.inject({ method: 'POST', url: path, remoteAddress: ip, ...(session ? { headers: { 'x-session': session } } : {}) })).statusCode;

/** Counts the commands a connection sends (every ioredis command, scripts included, goes through `sendCommand`). */
function countCommands(redis: RedisConnection): { readonly sent: number } {
  const counter = { sent: 0 };
  const send = redis.client.sendCommand.bind(redis.client);
  redis.client.sendCommand = ((...args: Parameters<typeof send>) => {
    counter.sent++;
    return send(...args);
  }) as typeof send;
  return counter;
}

describe('QR limits across three nodes on one Redis: decided on each node, synced in the background', () => {
  const connections: RedisConnection[] = [];
  const nodes: LimitedNode[] = [];
  afterAll(async () => {
    for (const node of nodes) node.stop();
    await Promise.all(nodes.map((n) => n.app.close()));
    await Promise.all(connections.map((c) => c.close()));
  });

  /**
   * Three nodes whose background sync never runs by itself during the test (a minute apart): the test syncs
   * them, so the order of hits and syncs is the test's, and the Redis commands can be counted exactly.
   */
  async function threeNodes(limits: { qrRequestsPerSessionPerMinute?: number; qrRequestsPerAddressPerMinute?: number }) {
    const prefix = testPrefix('rate-synced');
    const cfg = loadConfig({}, { ...limits, rateLimitSyncMs: 60_000, logLevel: 'silent' });
    const limited: RequestLimitName[] = [];
    const three = [];
    for (let i = 0; i < 3; i++) {
      const redis = testConnection(inject('redisUrl'), prefix);
      connections.push(redis);
      const node = await limitedNode(redis, limited, cfg);
      nodes.push(node);
      // Counted from when the connection is ready: its own set-up (CLIENT SETNAME, INFO) is no request's.
      await until(() => redis.ready, 'the connection');
      three.push({ ...node, commands: countCommands(redis) });
    }
    return { three, limited };
  }

  /**
   * Sends requests round-robin to the three nodes until none admits one more, syncing all three whenever all
   * three refuse; stops once a round right after a sync is refused everywhere (the cluster knows the window is
   * full). Counts the answers and the Redis commands sent while requests were answered and while syncing.
   */
  async function flood(three: Awaited<ReturnType<typeof threeNodes>>['three'], send: (app: FastifyInstance) => Promise<number>) {
    let answered = 0;
    let requests = 0;
    let commandsDuringRequests = 0;
    let syncs = 0;
    let commandsDuringSyncs = 0;
    const sent = () => three.reduce((sum, n) => sum + n.commands.sent, 0);
    for (let rounds = 0; rounds < 1000; rounds++) {
      const before = sent();
      const statuses = [];
      for (const node of three) statuses.push(await send(node.app));
      requests += statuses.length;
      commandsDuringRequests += sent() - before;
      answered += statuses.filter((s) => s === 200).length;
      if (statuses.some((s) => s === 200)) continue;
      const beforeSync = sent();
      await Promise.all(three.map((n) => n.sync()));
      syncs += 3;
      commandsDuringSyncs += sent() - beforeSync;
      const after = [];
      for (const node of three) after.push(await send(node.app));
      requests += after.length;
      answered += after.filter((s) => s === 200).length;
      if (!after.every((s) => s === 429)) continue;
      // Closed everywhere: three times the limit more, round-robin, and every one refused.
      const before2 = sent();
      for (let i = 0; i < 90; i++) expect(await send(three[i % 3]!.app)).toBe(429);
      requests += 90;
      commandsDuringRequests += sent() - before2;
      return { answered, requests, commandsDuringRequests, syncs, commandsDuringSyncs };
    }
    throw new Error('the cluster never closed the window');
  }

  it('one session round-robin far above its limit: at least the limit and at most limit + 3 × share − 1 answered, and no Redis command per request', async () => {
    // Limit 30, share 3: the documented bound is 30 + 3 × 3 − 1 = 38.
    const { three, limited } = await threeNodes({ qrRequestsPerSessionPerMinute: 30 });
    const result = await flood(three, (app) => hit(app, '/qr', '203.0.113.20', 'session-a'));
    expect(result.answered).toBeGreaterThanOrEqual(30);
    expect(result.answered).toBeLessThanOrEqual(30 + 3 * shareOf(30) - 1);
    expect(result.requests).toBeGreaterThan(4 * 30);
    expect(result.commandsDuringRequests).toBe(0);
    // One script per node and sync (the first may be sent twice: EVALSHA, then EVAL while Redis has not seen it).
    expect(result.commandsDuringSyncs).toBeGreaterThanOrEqual(result.syncs);
    expect(result.commandsDuringSyncs).toBeLessThanOrEqual(result.syncs + 3);
    expect(limited.every((l) => l === 'qr_session')).toBe(true);
    // The 429 is as on one node: problem+json, Retry-After, the limit's name.
    const refused = await three[0]!.app.inject({ method: 'POST', url: '/qr', remoteAddress: '203.0.113.20', headers: { 'x-session': 'session-a' } });
    expect(refused.statusCode).toBe(429);
    expect(refused.headers['content-type']).toContain('application/problem+json');
    expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(refused.json()).toMatchObject({ code: 'rate_limited', limit: 'qr_session' });
    // Another session is counted apart.
    expect(await hit(three[1]!.app, '/qr', '203.0.113.20', 'session-b')).toBe(200);
  });

  it('one address round-robin far above its limit, each request a new session: within the same bound', async () => {
    const { three, limited } = await threeNodes({ qrRequestsPerAddressPerMinute: 50 });
    let n = 0;
    const result = await flood(three, (app) => hit(app, '/qr', '203.0.113.30', `s-${++n}`));
    expect(result.answered).toBeGreaterThanOrEqual(50);
    expect(result.answered).toBeLessThanOrEqual(50 + 3 * shareOf(50) - 1);
    expect(result.commandsDuringRequests).toBe(0);
    expect(limited.every((l) => l === 'qr_address')).toBe(true);
    // Each sync of a node is still one script although it pushes one key per session it saw.
    expect(result.commandsDuringSyncs).toBeLessThanOrEqual(result.syncs + 3);
  });

  it('a burst of QR requests sends Redis nothing; a sync pushes only keys with half a share waiting, one script per node', async () => {
    const { three } = await threeNodes({});
    const sent = () => three.map((n) => n.commands.sent);
    const since = (before: number[]) => three.map((n, i) => n.commands.sent - before[i]!);
    // 300 sessions asking once each (the default share of 300 a minute is 30; a key is due at 15): nothing is due.
    let before = sent();
    for (let i = 0; i < 300; i++) expect(await hit(three[i % 3]!.app, '/qr', `198.51.100.${i % 50}`, `burst-${i}`)).toBe(200);
    expect(since(before)).toEqual([0, 0, 0]);
    await Promise.all(three.map((n) => n.sync()));
    expect(since(before)).toEqual([0, 0, 0]);
    // 30 sessions, each asking 15 times at one node (a waiting page's 30 s): all due, one batched script per node.
    before = sent();
    for (let j = 0; j < 30; j++) for (let k = 0; k < 15; k++) expect(await hit(three[j % 3]!.app, '/qr', `198.51.100.${j}`, `due-${j}`)).toBe(200);
    expect(since(before)).toEqual([0, 0, 0]);
    await Promise.all(three.map((n) => n.sync()));
    // One script each (two if Redis did not know it yet: EVALSHA, then EVAL).
    for (const n of since(before)) expect(n).toBeGreaterThanOrEqual(1);
    for (const n of since(before)) expect(n).toBeLessThanOrEqual(2);
  });
});

describe('request rate limits across two nodes on one Redis', () => {
  const connections: RedisConnection[] = [];
  const apps: FastifyInstance[] = [];
  afterAll(async () => {
    await Promise.all(apps.map((a) => a.close()));
    await Promise.all(connections.map((c) => c.close()));
  });

  it('the per-address registration limit is the limit across nodes, exactly; 429 is problem+json with Retry-After', async () => {
    const prefix = testPrefix('rate');
    connections.push(testConnection(inject('redisUrl'), prefix), testConnection(inject('redisUrl'), prefix));
    const limited: RequestLimitName[] = [];
    const [a, b] = [await limitedApp(connections[0], limited), await limitedApp(connections[1], limited)];
    apps.push(a, b);
    const statuses = [];
    for (let i = 0; i < 7; i++) statuses.push(await hit(i % 2 ? a : b, '/registration'));
    expect(statuses).toEqual([200, 200, 200, 200, 429, 429, 429]);
    const refused = await a.inject({ method: 'POST', url: '/registration', remoteAddress: '203.0.113.7' });
    expect(refused.headers['content-type']).toContain('application/problem+json');
    expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(refused.json()).toMatchObject({ code: 'rate_limited', limit: 'registration_address' });
    expect(limited.every((l) => l === 'registration_address')).toBe(true);
    // Another address, and the QR limit of the same address, are counted apart.
    expect(await hit(b, '/registration', '203.0.113.8')).toBe(200);
    expect(await hit(a, '/qr')).toBe(200);
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
    const node = await limitedNode(redis, []);
    apps.push(node.app);
    try {
      expect(await hit(node.app, '/qr')).toBe(200);
      await server.stopServer();
      await until(() => redis.down, 'the connection to notice');
      // The node's own count goes on (1 before the outage): the whole limit of 6, no share, no wait for Redis.
      const statuses = [];
      for (let i = 0; i < 8; i++) statuses.push(await hit(node.app, '/qr'));
      expect(statuses).toEqual([200, 200, 200, 200, 200, 429, 429, 429]);
      // A sync while Redis is down sends nothing and loses nothing: once Redis is back, the count is pushed.
      await node.sync();
      await server.start();
      await until(() => redis.ready, 'the reconnection');
      await node.sync();
      const otherRedis = testConnection(server.url, prefix);
      connections.push(otherRedis);
      const other = await limitedNode(otherRedis, []);
      apps.push(other.app);
      // The other node learns the pushed 6 at its first sync: after its first hit, it refuses.
      expect(await hit(other.app, '/qr')).toBe(200);
      await other.sync();
      expect(await hit(other.app, '/qr')).toBe(429);
      other.stop();
    } finally {
      node.stop();
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
