import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // One PostgreSQL per run for the store contract tests (inject('postgresUrl')).
    globalSetup: ['test/setup/postgres.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Integration tests start real servers on loopback; run files in parallel but keep it modest on 2 cores.
    maxWorkers: 2,
  },
});
