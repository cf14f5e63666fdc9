import type { TestProject } from 'vitest/node';
import { startPostgres, type PostgresServer } from '../helpers/postgres.js';

/**
 * One private PostgreSQL for the whole run (vitest globalSetup), started once instead of in every file
 * that needs one: tests read its maintenance URL with `inject('postgresUrl')` and create a database of
 * their own (test/helpers/backends.ts). Tests that stop PostgreSQL start a private one instead.
 */
let server: PostgresServer | undefined;

export async function setup(project: TestProject): Promise<void> {
  server = await startPostgres();
  project.provide('postgresUrl', server.adminUrl);
}

export async function teardown(): Promise<void> {
  await server?.stop();
}

declare module 'vitest' {
  export interface ProvidedContext {
    /** The maintenance database of the run's PostgreSQL (test/setup/postgres.ts). */
    postgresUrl: string;
  }
}
