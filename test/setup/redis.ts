import type { TestProject } from 'vitest/node';
import { startRedis } from '../helpers/redis.js';

/**
 * One private redis-server per test run, shared by the files that only need a Redis (each uses its own
 * key prefix, helpers/redis.ts `testConnection`); tests that restart Redis start their own.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const redis = await startRedis();
  project.provide('redisUrl', redis.url);
  return () => redis.stop();
}
