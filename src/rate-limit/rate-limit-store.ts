import type { FastifyRateLimitStore, FastifyRateLimitStoreCtor } from '@fastify/rate-limit';

/**
 * Where the request rate limits count (http/request-limits.ts): `@fastify/rate-limit`'s store contract,
 * one fixed-window counter per limit and key, answering the count and the time left in the window.
 * Implementations: the plugin's own LocalStore (one node: chosen by giving the plugin no store, so
 * `undefined` here means memory), redis-rate-limit-store.ts (a cluster: every node counts together, one
 * Redis round trip per hit), synced-rate-limit-store.ts (a cluster: each node decides alone and syncs in the
 * background, within a documented bound).
 */
export type RateLimitStore = FastifyRateLimitStoreCtor;

/**
 * One store for the plugin that hands each limit to the store named for it, the others to `otherwise`
 * (the plugin takes one store; it makes a child of it per limiter, passing the limiter's `limitName`).
 */
export function rateLimitStoreByLimit(byLimit: Readonly<Record<string, RateLimitStore>>, otherwise: RateLimitStore): RateLimitStore {
  const stores = new Map(Object.entries(byLimit).map(([name, Store]) => [name, new Store({})] as const));
  const fallback = new otherwise({});
  return class ByLimit {
    child(routeOptions: Parameters<FastifyRateLimitStore['child']>[0]): FastifyRateLimitStore {
      const name = (routeOptions as { limitName?: string }).limitName;
      return (stores.get(name ?? '') ?? fallback).child(routeOptions);
    }

    incr(key: string, callback: Parameters<FastifyRateLimitStore['incr']>[1], timeWindow: number, max: number): void {
      fallback.incr(key, callback, timeWindow, max);
    }
  } as unknown as RateLimitStore;
}
