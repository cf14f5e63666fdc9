import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import type { Delivery } from '../hub/delivery.js';
import type { CodeStore } from '../store/stores.js';
import type { PublishedMarks } from './published-marks.js';
import { publishSettledResult } from './settled-result.js';

/** Owed results published per sweep at most; the rest wait for the next sweep (a bounded burst after an outage). */
const SWEEP_LIMIT = 200;

/** What the outbox calls: the settled codes, the tabs' delivery, the marks, time, log. */
export interface ResultOutboxDeps {
  codes: Pick<CodeStore, 'unpublished'>;
  delivery: Delivery;
  marks: Pick<PublishedMarks, 'add'>;
  clock: Clock;
  log: Logger;
}

/** Which settled results the outbox still publishes (by age). */
export interface ResultOutboxSettings {
  /**
   * Results settled longer ago than this are not published any more: the tab's stream would not keep them
   * either (config `outboxMaxAgeSeconds`), and a tab that registers again is sent them by the replay.
   */
  windowMs: number;
  /**
   * A result is left this long to the node that settled it, which publishes it within milliseconds; only
   * one still owed after that (its node died, or the broker refused it) is published here.
   */
  graceMs: number;
}

/**
 * The result outbox (docs/events.md "Results reach the page once"): the settlement row of a code stores
 * the event its tab is sent, unpublished until it is in the tab's stream. A sweep publishes every result owed for longer than
 * `graceMs`, under the code's publish key, so a copy the dying node did publish, or another sweep's, is
 * not appended twice. It runs on one node of a cluster at a time (a lease); on two at once during a
 * hand-over it is still harmless.
 */
export class ResultOutbox {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<number> | undefined;

  constructor(
    private readonly deps: ResultOutboxDeps,
    private readonly settings: ResultOutboxSettings,
  ) {}

  /** Publishes the owed results; resolves with how many are in their tabs' streams now. Runs never overlap. */
  sweep(): Promise<number> {
    this.running ??= this.pass().finally(() => (this.running = undefined));
    return this.running;
  }

  start(intervalMs: number): void {
    this.timer = setInterval(() => {
      this.sweep().catch((err: unknown) => this.deps.log.warn({ err }, 'the result outbox sweep failed; tried again at the next'));
    }, intervalMs);
    this.timer.unref();
  }

  /** Stops the timer and waits for a sweep in progress. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running?.catch(() => undefined);
  }

  private async pass(): Promise<number> {
    const now = this.deps.clock.now();
    const owed = await this.deps.codes.unpublished(now - this.settings.windowMs, now - this.settings.graceMs, SWEEP_LIMIT);
    let published = 0;
    for (const result of owed) {
      const to = { tabId: result.tabId, session: result.sessionHash };
      // Not taken (the broker unreachable): the hub holds one copy for another try (a copy already held is
      // not held twice) and marks the row when that try lands; until then the row stays owed.
      if (await publishSettledResult(this.deps, result.code, to, result.event)) published++;
    }
    if (published > 0) this.deps.log.info({ published }, 'owed results published from their settlement rows');
    return published;
  }
}
