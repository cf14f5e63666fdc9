import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Deadlines bound a broken run only: a loaded 2-core machine on a cold Node.js line needs several times
    // what a quiet one does, and a test must never fail for being slow (test/helpers/until.ts DEADLINE_MS).
    testTimeout: 120_000,
    hookTimeout: 180_000,
    // Integration tests start real servers on loopback; run files in parallel but keep it modest on 2 cores.
    maxWorkers: 2,
    // Private servers shared by the run, one PostgreSQL and one Redis (each provides its URL to the tests
    // through `inject`: 'postgresUrl', 'redisUrl'); tests that restart a server start their own.
    globalSetup: ['test/setup/postgres.ts', 'test/setup/redis.ts'],
  },
});
