import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { TabwireError } from '../errors.js';
import type { RateLimitStore } from '../rate-limit/rate-limit-store.js';

/** Names of the request rate limits, as in `tabwire_rate_limited_total{limit}`. */
export type RequestLimitName = 'qr_session' | 'qr_address' | 'registration_address' | 'oidc_token_address';

/** What POST /QuickLogin checks once it knows which kind of request a body is. */
export interface RequestLimits {
  /** A QR request: counted per session (when it carries one) and per client address; 429 past either. */
  qr(request: FastifyRequest, sessionHash: string | null): Promise<void>;
  /** A backend registration or renewal: counted per client address; 429 past it. */
  registration(request: FastifyRequest): Promise<void>;
  /** A request to the OpenID Provider's token endpoint (docs/oidc.md "Limits"): counted per client address; 429 past it. */
  oidcToken(request: FastifyRequest): Promise<void>;
}

export interface RequestLimitsOptions {
  qrPerSessionPerMinute: number;
  qrPerAddressPerMinute: number;
  registrationsPerAddressPerMinute: number;
  oidcTokenPerAddressPerMinute: number;
  onLimited: (limit: RequestLimitName) => void;
  /**
   * The counters' home (rate-limit/rate-limit-store.ts). Default: this node's memory; a cluster
   * passes a shared store (chosen by wiring/shared.ts: the QR limits synced in the background,
   * rate-limit/synced-rate-limit-store.ts; the others exact, rate-limit/redis-rate-limit-store.ts) so
   * every node counts together. A store's `child` receives each limiter's `limitName` (a
   * RequestLimitName) to keep the limits' counters apart.
   */
  store?: RateLimitStore;
}

const WINDOW_MS = 60_000;

/** What each limit counts, for its 429's detail. */
const WHAT: Record<RequestLimitName, string> = {
  qr_session: 'QR requests',
  qr_address: 'QR requests',
  registration_address: 'backend registrations',
  oidc_token_address: 'token requests',
};
/**
 * Keys kept per limit (LRU). Eviction only forgets a count, so it can never refuse anyone wrongly;
 * 50,000 active keys per minute is ~7 MB per limit.
 */
const KEYS_PER_LIMIT = 50_000;

type Limiter = ReturnType<FastifyInstance['createRateLimit']>;

/**
 * Rate limits with `@fastify/rate-limit` (fixed one-minute windows). POST /QuickLogin serves two
 * kinds of request that are limited differently, and the kind is known only from the body, so the
 * route calls these limiters itself instead of a route-level hook. Addresses are `request.ip`:
 * the socket's peer, or X-Forwarded-For only when `trustProxy` is on (never a header a client
 * can forge past the proxy); IPv6 addresses count per /64, as one host usually holds a /64.
 */
export async function registerRequestLimits(app: FastifyInstance, o: RequestLimitsOptions): Promise<RequestLimits> {
  await app.register(rateLimit, {
    // Only where a route asks (POST /QuickLogin through the limiters below), never globally.
    global: false,
    timeWindow: WINDOW_MS,
    cache: KEYS_PER_LIMIT,
    ...(o.store ? { store: o.store } : {}),
    // Fail open: a store that errors lets the request through rather than refusing it for the store's
    // sake. The Redis store never errors (it counts on this node while Redis is unreachable), so this
    // is a second line only (docs/redis.md "Outage").
    skipOnError: true,
    // Any route given `config.rateLimit` later answers from the catalogue too (problem+json, Retry-After).
    errorResponseBuilder: (_request, context) =>
      new TabwireError('rate_limited', `Rate limit exceeded; retry in ${context.after}`, { retryAfter: Math.max(1, Math.ceil(context.ttl / 1000)) }),
  });
  // `cache` sizes each limiter's own LRU (the plugin passes it to its store's `child`).
  // `limitName` reaches a shared store's `child` (rate-limit/redis-rate-limit-store.ts); the memory store ignores it.
  const limiter = (limitName: RequestLimitName, max: number, keyGenerator?: (request: FastifyRequest) => string): Limiter =>
    app.createRateLimit({ max, timeWindow: WINDOW_MS, ...(keyGenerator ? { keyGenerator } : {}), cache: KEYS_PER_LIMIT, limitName } as Parameters<FastifyInstance['createRateLimit']>[0]);

  const sessionHashes = new WeakMap<FastifyRequest, string>();
  const qrSession = limiter('qr_session', o.qrPerSessionPerMinute, (request) => sessionHashes.get(request)!);
  const qrAddress = limiter('qr_address', o.qrPerAddressPerMinute);
  const registrationAddress = limiter('registration_address', o.registrationsPerAddressPerMinute);
  const oidcTokenAddress = limiter('oidc_token_address', o.oidcTokenPerAddressPerMinute);

  async function check(name: RequestLimitName, limit: Limiter, request: FastifyRequest): Promise<void> {
    const result = await limit(request);
    if (result.isAllowed || !result.isExceeded) return;
    o.onLimited(name);
    throw new TabwireError('rate_limited', `Too many ${WHAT[name]} from this ${name.endsWith('session') ? 'session' : 'address'}; retry in ${result.ttlInSeconds} s`, {
      // RFC 9110 §10.2.3 / RFC 6585 §4: when the window that refused ends.
      retryAfter: Math.max(1, result.ttlInSeconds),
      limit: name,
    });
  }

  return {
    async qr(request, sessionHash) {
      if (sessionHash !== null) {
        sessionHashes.set(request, sessionHash);
        await check('qr_session', qrSession, request);
      }
      await check('qr_address', qrAddress, request);
    },
    async registration(request) {
      await check('registration_address', registrationAddress, request);
    },
    async oidcToken(request) {
      await check('oidc_token_address', oidcTokenAddress, request);
    },
  };
}
