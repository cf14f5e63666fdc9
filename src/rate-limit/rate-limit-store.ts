import type { FastifyRateLimitStoreCtor } from '@fastify/rate-limit';

/**
 * Where the request rate limits count (http/request-limits.ts): `@fastify/rate-limit`'s store contract,
 * one fixed-window counter per limit and key, answering the count and the time left in the window.
 * Implementations: the plugin's own LocalStore (one node: chosen by giving the plugin no store, so
 * `undefined` here means memory), redis-rate-limit-store.ts (a cluster: every node counts together).
 */
export type RateLimitStore = FastifyRateLimitStoreCtor;
