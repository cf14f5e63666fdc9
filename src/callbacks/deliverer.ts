import type { KeyObject } from 'node:crypto';
import type { Logger } from 'pino';
import { Agent } from 'undici';
import type { Clock } from '../clock.js';
import { FifoQueue } from '../fifo-queue.js';
import type { Delivery } from '../hub/delivery.js';
import type { Metrics } from '../metrics.js';
import { EventTypes } from '../protocol/events.js';
import type { Callback, CallbackStore, CallbackToStore } from '../store/stores.js';
import { CheckedUrls, filteringLookup, type CallbackPolicy, type Resolver } from './address-policy.js';
import { backoffMs, failureReason, outcomeOfAnswer, type Outcome } from './attempt-outcome.js';
import { BatchSigner } from './batch-signer.js';
import { postOnce } from './post.js';
import { webhookSignatureHeader } from './webhook-signature.js';

/** What the deliverer calls: the callback outbox, the tabs' delivery, time, log, metrics, the DNS resolver. */
export interface DelivererDeps {
  callbacks: CallbackStore;
  delivery: Delivery;
  clock: Clock;
  log: Logger;
  metrics: Metrics;
  resolve: Resolver;
}

/** The deliverer's signing key, address policy, TLS trust, timings and bounds (from the configuration). */
export interface DelivererSettings {
  privateKey: KeyObject;
  policy: CallbackPolicy;
  /** Extra CA certificates (PEM) trusted for callbacks, e.g. a backend's own CA. */
  ca: string | undefined;
  retryBaseMs: number;
  retryCapMs: number;
  connectTimeoutMs: number;
  totalTimeoutMs: number;
  pollMs: number;
  /** Own attempts in flight at once (default CONCURRENCY; tests make it small). */
  concurrency?: number;
  /** Callbacks this node holds for its own attempts (default QUEUE_LIMIT; tests make it small). */
  queueLimit?: number;
}

/** A claim outlives an attempt by this much; after a crash, its callbacks are retried once the lease lapses. */
const LEASE_MARGIN_MS = 1_000;
/** Callbacks claimed at once by a pass (retries, and what another node or a restart left). */
const BATCH = 16;
/** Attempts of this node's own new callbacks in flight at once (each holds a connection to its backend). */
const CONCURRENCY = 64;
/**
 * New callbacks this node holds in memory (stored already leased to it) for its own attempts; more are
 * stored unleased and wait for a claim pass. Bounds memory (a body is about 1 KiB) under a burst.
 */
const QUEUE_LIMIT = 4_096;
/**
 * Extra lease for a callback that has to wait for an attempt slot: a queue that drains within this needs
 * no lease renewal. (A callback attempted at once gets the plain lease, so a crash frees it as soon as before.)
 */
const QUEUE_GRACE_MS = 5_000;
/** Response bodies are not read beyond this (a backend's answer is not needed, only its status). */
const MAX_RESPONSE_BYTES = 4096;

/** A stored callback this node holds the lease of, waiting for a free attempt slot. */
interface Held {
  callback: Callback;
  leaseUntil: number;
}


/**
 * The durable callback outbox (docs/backend.md "Delivery guarantees"): every callback is in the store
 * before its first attempt; attempts back off with jitter and honour Retry-After until the first
 * 2xx or the deadline; 410 stops them; a restart picks up whatever is pending. On the first 2xx
 * the tab hears `SignatureReceivedBE` (data ""), once.
 */
export class CallbackDeliverer {
  private readonly agent: Agent;
  /** Ed25519 off the event loop, in batches (batch-signer.ts). */
  private readonly signer: BatchSigner;
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  private rerun = false;
  /** Set by `stop`: nothing new starts (held callbacks stay leased in the store and are retried once it lapses). */
  private stopping = false;
  private stopped: Promise<void> | undefined;
  private readonly inFlight = new Set<Promise<void>>();
  /** Held callbacks not yet attempted, oldest first. */
  private readonly queue = new FifoQueue<Held>();
  /** Own attempts running (at most CONCURRENCY). */
  private active = 0;
  /** Callbacks this node took on: being stored, queued or being attempted (at most QUEUE_LIMIT). */
  private held = 0;
  private readonly leaseMs: number;
  private readonly concurrency: number;
  private readonly queueLimit: number;
  /** Callback URLs checked without the network, remembered. */
  private readonly urlChecks: CheckedUrls;
  /** The metric children, looked up once rather than per attempt. */
  private readonly attemptsBy: Record<Outcome['kind'], { inc(): void }>;

  constructor(
    private readonly deps: DelivererDeps,
    private readonly settings: DelivererSettings,
  ) {
    this.leaseMs = settings.totalTimeoutMs + LEASE_MARGIN_MS;
    this.concurrency = settings.concurrency ?? CONCURRENCY;
    this.queueLimit = settings.queueLimit ?? QUEUE_LIMIT;
    this.urlChecks = new CheckedUrls(settings.policy);
    this.signer = new BatchSigner(settings.privateKey);
    // Connect-time address check (no DNS-rebinding gap); redirects are never followed by `request`.
    this.agent = new Agent({
      connect: { lookup: filteringLookup(settings.policy, deps.resolve), timeout: settings.connectTimeoutMs, ...(settings.ca ? { ca: settings.ca } : {}) },
      headersTimeout: settings.totalTimeoutMs,
      bodyTimeout: settings.totalTimeoutMs,
    });
    const attempts = deps.metrics.callbackAttempts;
    this.attemptsBy = { delivered: attempts.labels('delivered'), gone: attempts.labels('gone'), retry: attempts.labels('retry') };
  }

  start(): void {
    this.timer = setInterval(() => this.kick(), this.settings.pollMs);
    this.timer.unref();
    this.kick();
  }

  /** Waits for the attempts in flight, then closes the connections. Idempotent. */
  stop(): Promise<void> {
    this.stopped ??= (async () => {
      this.stopping = true;
      clearInterval(this.timer);
      await Promise.allSettled([...this.inFlight]);
      await this.agent.close();
      await this.signer.close();
    })();
    return this.stopped;
  }

  /**
   * Stores a callback and tries it at once. While this node holds fewer than QUEUE_LIMIT callbacks, it
   * stores this one already leased to itself and attempts it as soon as one of its CONCURRENCY attempt
   * slots is free (no claim round-trip); otherwise the callback is stored unleased and the next pass
   * claims it. Returns false when a callback with that id exists already.
   */
  async enqueue(callback: Callback): Promise<boolean> {
    return this.storeAndAttempt(callback, (c) => this.deps.callbacks.insert(c.callback, c.leaseUntil));
  }

  /**
   * Like `enqueue`, with the write done by `save` (backend mode: in the transaction that settles the
   * code). Nothing is attempted unless `save` says it stored the callback.
   */
  async storeAndAttempt(callback: Callback, save: (toStore: CallbackToStore) => Promise<boolean>): Promise<boolean> {
    const hold = this.held < this.queueLimit;
    const waits = this.held >= this.concurrency;
    if (hold) this.held++;
    const leaseUntil = this.deps.clock.now() + this.leaseMs + (waits ? QUEUE_GRACE_MS : 0);
    let stored = false;
    try {
      stored = await save(hold ? { callback, leaseUntil } : { callback });
    } finally {
      if (hold && !stored) this.held--;
    }
    if (!stored) return false;
    if (!hold) {
      this.kick();
      return true;
    }
    this.queue.push({ callback, leaseUntil });
    this.pump();
    return true;
  }

  /** Starts held callbacks while attempt slots are free. */
  private pump(): void {
    while (!this.stopping && this.active < this.concurrency && this.queue.length > 0) {
      const next = this.queue.shift()!;
      this.active++;
      const attempt = this.attemptHeld(next)
        .catch((err: unknown) => this.deps.log.error({ err, webhookId: next.callback.id }, 'callback attempt failed'))
        .finally(() => {
          this.active--;
          this.held--;
          this.inFlight.delete(attempt);
          this.pump();
        });
      this.inFlight.add(attempt);
    }
  }

  /**
   * Attempts a callback held since it was stored. An attempt must end before the lease does (then another
   * claim may take the callback), so one that waited in the queue long enough to eat into the time an
   * attempt needs first renews its lease; if the lease lapsed and another claim took it, this node lets go.
   */
  private async attemptHeld({ callback, leaseUntil }: Held): Promise<void> {
    const now = this.deps.clock.now();
    if (leaseUntil - now < this.settings.totalTimeoutMs + LEASE_MARGIN_MS / 2) {
      if (!(await this.deps.callbacks.renewLease(callback.id, leaseUntil, now + this.leaseMs))) {
        this.deps.log.info({ webhookId: callback.id }, 'callback lease lapsed while queued and another claim took it; left to that claim');
        return;
      }
    }
    await this.attempt(callback);
  }

  /** Runs a pass over due callbacks (coalesced: a kick during a pass runs one more pass). */
  kick(): void {
    if (this.stopping) return;
    if (this.running) {
      this.rerun = true;
      return;
    }
    this.running = true;
    const pass = this.pass()
      .catch((err: unknown) => this.deps.log.error({ err }, 'callback pass failed'))
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
      const due = await this.deps.callbacks.claimDue(this.deps.clock.now(), this.leaseMs, BATCH);
      if (due.length === 0) return;
      await Promise.all(due.map((c) => this.attempt(c)));
    }
  }

  private async attempt(callback: Callback): Promise<void> {
    const attempt = callback.attempts + 1;
    const started = performance.now();
    const outcome = await this.send(callback);
    const ms = performance.now() - started;
    this.deps.metrics.callbackLatency.observe(ms / 1000);
    this.attemptsBy[outcome.kind].inc();
    // A delivered attempt is the common case and the metrics count it: its line is debug. A failed one is
    // what an operator looks for, so it stays at info.
    if (outcome.kind === 'delivered') {
      if (this.deps.log.isLevelEnabled('debug')) this.deps.log.debug({ webhookId: callback.id, attempt, outcome: outcome.kind, ms: Math.round(ms) }, 'callback attempt');
    } else {
      this.deps.log.info({ webhookId: callback.id, attempt, outcome: outcome.kind, reason: 'reason' in outcome ? outcome.reason : undefined, ms: Math.round(ms) }, 'callback attempt');
    }

    switch (outcome.kind) {
      case 'delivered':
        if (await this.deps.callbacks.markDelivered(callback.id, this.deps.clock.now())) {
          this.deps.metrics.callbackDelivered.inc();
          // Only the session that asked for the code hears it (docs/events.md).
          if (callback.tabId !== '' && callback.tabSession !== null) {
            await this.deps.delivery.deliver({ tabId: callback.tabId, session: callback.tabSession }, { type: EventTypes.SignatureReceivedBE, data: '' });
          }
        }
        return;
      case 'gone':
        this.deps.metrics.callbackFailures.inc({ reason: 'gone' });
        return this.deps.callbacks.finish(callback.id, 'gone', attempt, 'the backend answered 410 Gone');
      case 'retry': {
        this.deps.metrics.callbackFailures.inc({ reason: outcome.reason });
        const now = this.deps.clock.now();
        const next = now + (outcome.retryAfterMs ?? backoffMs(attempt, this.settings.retryBaseMs, this.settings.retryCapMs));
        if (next >= callback.deadline) {
          this.deps.metrics.callbackFailures.inc({ reason: 'expired' });
          return this.deps.callbacks.finish(callback.id, 'expired', attempt, `${outcome.reason}; no time left before the deadline`);
        }
        return this.deps.callbacks.reschedule(callback.id, attempt, next, outcome.reason);
      }
    }
  }

  private async send(callback: Callback): Promise<Outcome> {
    // Again at delivery: an IP-literal host never goes through the lookup.
    const url = this.urlChecks.allowed(callback.url);
    if (url === null) return { kind: 'retry', reason: 'address_refused' };
    const timestamp = Math.floor(this.deps.clock.now() / 1000);
    try {
      const signature = await webhookSignatureHeader({ id: callback.id, timestamp, body: callback.body, signEd25519: (content) => this.signer.sign(content), secret: callback.webhookSecret });
      const headers = {
        'content-type': 'application/json',
        'user-agent': 'tabwire-callbacks',
        'webhook-id': callback.id,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': signature,
      };
      const { status, retryAfter } = await postOnce(this.agent, url, headers, callback.body, { timeoutMs: this.settings.totalTimeoutMs, maxResponseBytes: MAX_RESPONSE_BYTES });
      return outcomeOfAnswer(status, retryAfter, this.deps.clock.now());
    } catch (err) {
      return { kind: 'retry', reason: failureReason(err) };
    }
  }
}
