import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Integration tests start real servers on loopback; run files in parallel but keep it modest on 2 cores.
    maxWorkers: 2,
    // Private servers shared by the run, one PostgreSQL and one Redis (each provides its URL to the tests
    // through `inject`: 'postgresUrl', 'redisUrl'); tests that restart a server start their own.
    globalSetup: ['test/setup/postgres.ts', 'test/setup/redis.ts'],
  },
});
