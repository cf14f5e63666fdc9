import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { buildApp, type Deps } from '../../src/app.js';
import type { Resolver } from '../../src/callbacks/address-policy.js';
import { ManualClock, systemClock, type Clock } from '../../src/clock.js';
import { loadConfig } from '../../src/config/load.js';
import type { ConfigInput } from '../../src/config/schema.js';
import { createIdentity } from '../../src/identity/create.js';
import type { Store } from '../../src/store/stores.js';
import { openStore } from '../../src/store/open.js';

/** A free loopback port (closed again before use; good enough for tests on one machine). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export interface TestService {
  app: FastifyInstance;
  /** Where the test reaches the service: always loopback, whatever publicBaseUrl says. */
  baseUrl: string;
  publicBaseUrl: string;
  wsUrl: string;
  /** A ManualClock unless the test asked for the real one. */
  clock: ManualClock;
  store: Store;
  dir: string;
  close(): Promise<void>;
}

/**
 * Resolves only the names a test gives it; every other name fails as unknown, so no test ever asks
 * a real DNS server (and so never learns an address outside this machine).
 */
export function testResolver(names: Record<string, string[]> = {}): Resolver {
  return async (hostname) => {
    const addresses = names[hostname.toLowerCase()];
    if (!addresses) throw Object.assign(new Error(`test resolver: ${hostname} unknown`), { code: 'ENOTFOUND' });
    return addresses;
  };
}

export interface StartOptions {
  /** Use the real clock (for tests that wait on timers, such as callback retries). */
  realClock?: boolean;
  resolve?: Resolver;
  /** Reuse an existing database file (restart tests). */
  sqliteFile?: string;
  /**
   * Run on PostgreSQL instead of SQLite (cluster mode's store): several services given one URL share one
   * database, as the nodes of a cluster do. test/helpers/backends.ts `postgresDatabase()` makes a fresh one.
   */
  databaseUrl?: string;
}

/** A real tabwire on a loopback port with its own SQLite file (or a PostgreSQL database) and a clock the test moves. */
export async function startService(overrides: Partial<ConfigInput> = {}, options: StartOptions = {}): Promise<TestService> {
  const dir = mkdtempSync(join(tmpdir(), 'tabwire-test-'));
  const config = loadConfig({}, {
    port: overrides.port ?? (await freePort()),
    sqliteFile: options.sqliteFile ?? join(dir, 'tabwire.sqlite'),
    ...(options.databaseUrl === undefined ? {} : { databaseUrl: options.databaseUrl }),
    logLevel: 'silent',
    ...overrides,
  });
  const clock = new ManualClock();
  // The way the service and the CLI open it (src/store/open.ts).
  const store = await openStore(config);
  const deps: Deps = { clock: options.realClock ? (systemClock as Clock) : clock, store, resolve: options.resolve ?? testResolver() };
  const app = await buildApp(config, deps);
  const { port } = config;
  await app.listen({ host: '127.0.0.1', port });
  const scheme = config.tlsCertFile === undefined ? 'http' : 'https';
  return {
    app,
    baseUrl: `${scheme}://127.0.0.1:${port}`,
    publicBaseUrl: config.publicBaseUrl,
    wsUrl: `${scheme === 'https' ? 'wss' : 'ws'}://127.0.0.1:${port}/ClientEventsWS`,
    clock,
    store,
    dir,
    async close() {
      await app.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** An identity in the service's store, in the given state, with its private key. */
export async function makeIdentity(service: TestService, properties: Record<string, string>, approve = true) {
  const created = await createIdentity({
    identities: service.store.identities,
    clock: service.clock,
    provider: 'legal.test',
    properties,
    validDays: 365,
  });
  if (approve) await service.store.identities.transition(created.identity.id, 'Created', 'Approved', service.clock.now());
  return created;
}
