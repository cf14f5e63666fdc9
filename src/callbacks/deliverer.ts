import type { KeyObject } from 'node:crypto';
import type { Logger } from 'pino';
import { Agent, request } from 'undici';
import type { Clock } from '../clock.js';
import type { Delivery } from '../hub/delivery.js';
import type { Metrics } from '../metrics.js';
import { EventTypes } from '../protocol/events.js';
import type { Callback, CallbackStore, CallbackToStore } from '../store/stores.js';
import { checkCallbackUrl, filteringLookup, type CallbackPolicy, type Resolver } from './address-policy.js';
import { webhookSignatureHeader } from './webhook-signature.js';

export interface DelivererOptions {
  callbacks: CallbackStore;
  delivery: Delivery;
  clock: Clock;
  log: Logger;
  metrics: Metrics;
  privateKey: KeyObject;
  policy: CallbackPolicy;
  resolve: Resolver;
  /** Extra CA certificates (PEM) trusted for callbacks, e.g. a backend's own CA. */
  ca: string | undefined;
  retryBaseMs: number;
  retryCapMs: number;
  connectTimeoutMs: number;
  totalTimeoutMs: number;
  pollMs: number;
}

/** A claim outlives an attempt by this much; after a crash, its callbacks are retried once the lease lapses. */
const LEASE_MARGIN_MS = 1_000;
const BATCH = 16;
/** Callbacks attempted straight from enqueue at once; more wait in the store for a pass. */
const DIRECT_LIMIT = 64;
/** Response bodies are not read beyond this (a backend's answer is not needed, only its status). */
const MAX_RESPONSE_BYTES = 4096;

type Outcome = { kind: 'delivered' } | { kind: 'gone' } | { kind: 'retry'; reason: string; retryAfterMs?: number };

/**
 * The durable callback outbox (ARCHITECTURE.md §2 "Backend mode"): every callback is in the store
 * before its first attempt; attempts back off with jitter and honour Retry-After until the first
 * 2xx or the deadline; 410 stops them; a restart picks up whatever is pending. On the first 2xx
 * the tab hears `SignatureReceivedBE` (data ""), once.
 */
export class CallbackDeliverer {
  private readonly agent: Agent;
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  private rerun = false;
  private readonly inFlight = new Set<Promise<void>>();
  /** Attempts started straight from enqueue, not yet finished. */
  private direct = 0;
  private readonly leaseMs: number;

  constructor(private readonly o: DelivererOptions) {
    this.leaseMs = o.totalTimeoutMs + LEASE_MARGIN_MS;
    // Connect-time address check (no DNS-rebinding gap); redirects are never followed by `request`.
    this.agent = new Agent({
      connect: { lookup: filteringLookup(o.policy, o.resolve), timeout: o.connectTimeoutMs, ...(o.ca ? { ca: o.ca } : {}) },
      headersTimeout: o.totalTimeoutMs,
      bodyTimeout: o.totalTimeoutMs,
    });
  }

  start(): void {
    this.timer = setInterval(() => this.kick(), this.o.pollMs);
    this.timer.unref();
    this.kick();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await Promise.allSettled([...this.inFlight]);
    await this.agent.close();
  }

  /**
   * Stores a callback and tries it at once. While fewer than DIRECT_LIMIT such attempts are running, this
   * node stores it already leased and attempts it itself (no claim round-trip); otherwise the next
   * pass claims it. Returns false when a callback with that id exists already.
   */
  async enqueue(callback: Callback): Promise<boolean> {
    return this.storeAndAttempt(callback, (c) => this.o.callbacks.insert(c.callback, c.leaseUntil));
  }

  /**
   * Like `enqueue`, with the write done by `save` (backend mode: in the transaction that settles the
   * code). Nothing is attempted unless `save` says it stored the callback.
   */
  async storeAndAttempt(callback: Callback, save: (toStore: CallbackToStore) => Promise<boolean>): Promise<boolean> {
    const direct = this.direct < DIRECT_LIMIT;
    if (direct) this.direct++;
    let stored = false;
    try {
      stored = await save(direct ? { callback, leaseUntil: this.o.clock.now() + this.leaseMs } : { callback });
    } finally {
      if (direct && !stored) this.direct--;
    }
    if (!stored) return false;
    if (!direct) {
      this.kick();
      return true;
    }
    const attempt = this.attempt(callback)
      .catch((err: unknown) => this.o.log.error({ err, webhookId: callback.id }, 'callback attempt failed'))
      .finally(() => {
        this.direct--;
        this.inFlight.delete(attempt);
      });
    this.inFlight.add(attempt);
    return true;
  }

  /** Runs a pass over due callbacks (coalesced: a kick during a pass runs one more pass). */
  kick(): void {
    if (this.running) {
      this.rerun = true;
      return;
    }
    this.running = true;
    const pass = this.pass()
      .catch((err: unknown) => this.o.log.error({ err }, 'callback pass failed'))
      .finally(() => {
        this.running = false;
        this.inFlight.delete(pass);
        if (this.rerun) {
          this.rerun = false;
          this.kick();
        }
      });
    this.inFlight.add(pass);
  }

  private async pass(): Promise<void> {
    for (;;) {
      const due = await this.o.callbacks.claimDue(this.o.clock.now(), this.leaseMs, BATCH);
      if (due.length === 0) return;
      await Promise.all(due.map((c) => this.attempt(c)));
    }
  }

  private async attempt(callback: Callback): Promise<void> {
    const attempt = callback.attempts + 1;
    const started = performance.now();
    const outcome = await this.send(callback);
    const ms = performance.now() - started;
    this.o.metrics.callbackLatency.observe(ms / 1000);
    this.o.metrics.callbackAttempts.inc({ outcome: outcome.kind });
    this.o.log.info({ webhookId: callback.id, attempt, outcome: outcome.kind, reason: 'reason' in outcome ? outcome.reason : undefined, ms: Math.round(ms) }, 'callback attempt');

    switch (outcome.kind) {
      case 'delivered':
        if (await this.o.callbacks.markDelivered(callback.id, this.o.clock.now())) {
          this.o.metrics.callbackDelivered.inc();
          // Only the session that asked for the code hears it (docs/events.md).
          if (callback.tabId !== '' && callback.tabSession !== null) {
            await this.o.delivery.deliver({ tabId: callback.tabId, session: callback.tabSession }, { type: EventTypes.SignatureReceivedBE, data: '' });
          }
        }
        return;
      case 'gone':
        this.o.metrics.callbackFailures.inc({ reason: 'gone' });
        return this.o.callbacks.finish(callback.id, 'gone', attempt, 'the backend answered 410 Gone');
      case 'retry': {
        this.o.metrics.callbackFailures.inc({ reason: outcome.reason });
        const now = this.o.clock.now();
        const next = now + (outcome.retryAfterMs ?? this.backoff(attempt));
        if (next >= callback.deadline) {
          this.o.metrics.callbackFailures.inc({ reason: 'expired' });
          return this.o.callbacks.finish(callback.id, 'expired', attempt, `${outcome.reason}; no time left before the deadline`);
        }
        return this.o.callbacks.reschedule(callback.id, attempt, next, outcome.reason);
      }
    }
  }

  /** Exponential backoff with jitter: a random delay in [d/2, d], d = base * 2^(attempt-1), capped. */
  private backoff(attempt: number): number {
    const delay = Math.min(this.o.retryCapMs, this.o.retryBaseMs * 2 ** (attempt - 1));
    return delay / 2 + Math.random() * (delay / 2);
  }

  private async send(callback: Callback): Promise<Outcome> {
    try {
      // Again at delivery: an IP-literal host never goes through the lookup.
      checkCallbackUrl(callback.url, this.o.policy);
    } catch {
      return { kind: 'retry', reason: 'address_refused' };
    }
    const timestamp = Math.floor(this.o.clock.now() / 1000);
    try {
      const response = await request(callback.url, {
        method: 'POST',
        dispatcher: this.agent,
        signal: AbortSignal.timeout(this.o.totalTimeoutMs),
        headers: {
          'content-type': 'application/json',
          'user-agent': 'tabwire-callbacks',
          'webhook-id': callback.id,
          'webhook-timestamp': String(timestamp),
          'webhook-signature': webhookSignatureHeader({ id: callback.id, timestamp, body: callback.body, privateKey: this.o.privateKey, secret: callback.webhookSecret }),
        },
        body: callback.body,
      });
      await response.body.dump({ limit: MAX_RESPONSE_BYTES }).catch(() => undefined);
      const status = response.statusCode;
      if (status >= 200 && status < 300) return { kind: 'delivered' };
      if (status === 410) return { kind: 'gone' };
      const retryAfterMs = parseRetryAfter(response.headers['retry-after'], this.o.clock.now());
      const reason = status >= 300 && status < 400 ? 'redirect_not_followed' : `status_${status}`;
      return retryAfterMs === undefined ? { kind: 'retry', reason } : { kind: 'retry', reason, retryAfterMs };
    } catch (err) {
      return { kind: 'retry', reason: failureReason(err) };
    }
  }
}

/** RFC 9110 §10.2.3: seconds or an HTTP date. */
function parseRetryAfter(value: string | string[] | undefined, now: number): number | undefined {
  const text = Array.isArray(value) ? value[0] : value;
  if (text === undefined) return undefined;
  if (/^\d+$/.test(text.trim())) return Number(text.trim()) * 1000;
  const date = Date.parse(text);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

function failureReason(err: unknown): string {
  const code = (err as { code?: string; cause?: { code?: string } }).code ?? (err as { cause?: { code?: string } }).cause?.code;
  if (code === 'ECALLBACKADDRESS') return 'address_refused';
  if (code === 'ECONNREFUSED') return 'connection_refused';
  if (code === 'UND_ERR_CONNECT_TIMEOUT' || code === 'UND_ERR_HEADERS_TIMEOUT' || (err as Error).name === 'TimeoutError') return 'timeout';
  if (typeof code === 'string' && (code.startsWith('ERR_TLS') || code.includes('CERT') || code === 'DEPTH_ZERO_SELF_SIGNED_CERT')) return 'tls';
  return 'network';
}
