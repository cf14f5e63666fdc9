import type { Logger } from 'pino';
import type { Lease } from './lease.js';

/** Stops what `lead` started; resolves when it has stopped. */
export type StopLeading = () => Promise<void>;

export interface LeaderRunnerOptions {
  lease: Lease;
  /**
   * Starts the work when this node has become the holder (`token`: the hold's fencing token) and
   * answers how to stop it. Should return promptly (start in the background): renewals wait for it.
   */
  lead: (token: number) => StopLeading | Promise<StopLeading>;
  /** Renewal interval while holding; default a third of the TTL, so two renewals may fail before the hold ends. */
  renewEveryMs?: number;
  /** How often a node that does not hold the lease tries to take it; default a sixth of the TTL (fail-over ≤ TTL + this). */
  retryEveryMs?: number;
  log: Logger;
  /** Told every change of `leading` (logs, tests). */
  onChange?: (leading: boolean) => void;
  /** Monotonic milliseconds (tests); default `performance.now`. */
  now?: () => number;
}

/**
 * Runs some work on exactly one node at a time: the holder of a lease (docs/redis.md "Leases").
 * It tries to take the lease every `retryEveryMs`; once it holds it, it starts the work and renews
 * every `renewEveryMs`. It stops the work when
 * - a renewal answers that the hold is over (another node holds it now), or
 * - no renewal succeeded for so long that the hold might end before the next one (Redis unreachable):
 *   the work stops before the TTL runs out, so it never runs on two nodes unless a node is paused
 *   (GC, swap) for longer than the margin — resources that can check fencing tokens close that gap.
 * `stop()` stops the work first and then releases the lease, so the next holder starts at once.
 */
export class LeaderRunner {
  readonly #o: Required<Omit<LeaderRunnerOptions, 'onChange'>> & Pick<LeaderRunnerOptions, 'onChange'>;
  #hold: { token: number; stop: StopLeading } | undefined;
  /** Monotonic time until which the current hold is certainly ours (the last successful renewal was sent before it). */
  #validUntil = 0;
  #stopped = true;
  #loop: Promise<void> | undefined;
  #wake: (() => void) | undefined;
  #unreachable = false;

  constructor(options: LeaderRunnerOptions) {
    const ttl = options.lease.ttlMs;
    this.#o = {
      renewEveryMs: Math.floor(ttl / 3),
      retryEveryMs: Math.max(50, Math.floor(ttl / 6)),
      now: () => performance.now(),
      ...options,
      log: options.log.child({ module: 'lease', lease: options.lease.name }),
    };
  }

  /** True while this node holds the lease and its work runs. */
  get leading(): boolean {
    return this.#hold !== undefined;
  }

  start(): void {
    if (!this.#stopped) throw new Error('LeaderRunner already started');
    this.#stopped = false;
    this.#loop = this.#run();
  }

  /** Stops the work (if running here), releases the lease and stops competing for it. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#wake?.();
    await this.#loop;
  }

  async #run(): Promise<void> {
    while (!this.#stopped) {
      if (!this.#hold) {
        await this.#tryLead();
        if (!this.#hold) {
          await this.#sleep(this.#o.retryEveryMs);
          continue;
        }
      }
      await this.#sleep(this.#o.renewEveryMs);
      if (this.#stopped) break;
      await this.#renew();
      // Just stepped down: compete again only after a retry interval, not in the same breath.
      if (!this.#hold) await this.#sleep(this.#o.retryEveryMs);
    }
    if (this.#hold) await this.#stepDown('stopped', true);
  }

  async #tryLead(): Promise<void> {
    const { lease } = this.#o;
    const sentAt = this.#o.now();
    let token: number | undefined;
    try {
      token = await lease.acquire();
      this.#reachable();
    } catch (err) {
      this.#failed(err);
      return;
    }
    if (token === undefined || this.#stopped) {
      if (token !== undefined) await lease.release(token).catch(() => undefined);
      return;
    }
    this.#validUntil = sentAt + lease.ttlMs;
    try {
      const stop = await this.#o.lead(token);
      this.#hold = { token, stop };
    } catch (err) {
      this.#o.log.error({ err }, 'starting the leased work failed; the lease is given up');
      await lease.release(token).catch(() => undefined);
      return;
    }
    // On an embedded node the lease is always this node's: a line at start would only push the start line down.
    const level = lease.scope === 'cluster' ? 'info' : 'debug';
    this.#o.log[level]({ token }, 'lease taken: this node runs the work');
    this.#o.onChange?.(true);
  }

  async #renew(): Promise<void> {
    const hold = this.#hold!;
    const sentAt = this.#o.now();
    let renewed: boolean | undefined;
    try {
      // Half an interval at most, so a hung renewal still leaves time to step down before the hold ends.
      renewed = await withTimeout(this.#o.lease.renew(hold.token), this.#o.renewEveryMs / 2);
      this.#reachable();
    } catch (err) {
      this.#failed(err);
    }
    if (renewed === true) this.#validUntil = sentAt + this.#o.lease.ttlMs;
    else if (renewed === false) await this.#stepDown('lost', false);
    // Unconfirmed: step down unless the next attempt (an interval from now, and up to half an interval
    // long) would still end before the hold can. Checking only "the next attempt starts in time" let a
    // timer that fired a little early push the step-down past the end of the hold under load.
    else if (sentAt + this.#o.renewEveryMs * 1.5 >= this.#validUntil) await this.#stepDown('unconfirmed', true);
  }

  async #stepDown(reason: 'stopped' | 'lost' | 'unconfirmed', release: boolean): Promise<void> {
    const hold = this.#hold!;
    this.#hold = undefined;
    const level = reason !== 'stopped' ? 'warn' : this.#o.lease.scope === 'cluster' ? 'info' : 'debug';
    this.#o.log[level]({ reason, token: hold.token }, 'lease given up: this node stops the work');
    try {
      await hold.stop();
    } catch (err) {
      this.#o.log.error({ err }, 'stopping the leased work failed');
    }
    // Best effort: compare-and-delete never ends another holder's hold.
    if (release) await withTimeout(this.#o.lease.release(hold.token), this.#o.renewEveryMs).catch(() => undefined);
    this.#o.onChange?.(false);
  }

  #failed(err: unknown): void {
    if (this.#unreachable) return;
    this.#unreachable = true;
    this.#o.log.warn({ err }, 'lease store unreachable');
  }

  #reachable(): void {
    this.#unreachable = false;
  }

  #sleep(ms: number): Promise<void> {
    if (this.#stopped) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.#wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }
}

/** Work that runs on one node of the cluster at a time, e.g. the retention purge (`start(interval)` / `stop()`). */
export interface ClusterJob {
  start(): void;
  stop(): Promise<void>;
}

/**
 * Runs `job` only on the holder of `lease` (docs/redis.md "Periodic jobs"). For jobs that are safe
 * but wasteful on several nodes: the lease avoids the waste; a short overlap at a hand-over harms nothing.
 */
export function runOncePerCluster(lease: Lease, job: ClusterJob, log: Logger): LeaderRunner {
  return new LeaderRunner({
    lease,
    log,
    lead: () => {
      job.start();
      return () => job.stop();
    },
  });
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** Work that runs every `intervalMs` while started: the retention purge, the result outbox's sweep. */
export interface PeriodicJob {
  start(intervalMs: number): void;
  stop(): Promise<void>;
}

/** `runOncePerCluster` for a periodic job: it runs every `intervalMs`, on the holder of `lease` only. */
export function runPeriodicallyOncePerCluster(lease: Lease, job: PeriodicJob, intervalMs: number, log: Logger): LeaderRunner {
  return runOncePerCluster(lease, { start: () => job.start(intervalMs), stop: () => job.stop() }, log);
}
