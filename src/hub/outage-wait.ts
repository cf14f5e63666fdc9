import { isOutage } from '../errors.js';

/** First pause between two tries; it doubles up to OUTAGE_RETRY_CAP_MS (docs/errors.md "Outages"). */
const OUTAGE_RETRY_BASE_MS = 100;
/** A recovered store or Redis is noticed within about this long. */
const OUTAGE_RETRY_CAP_MS = 1_000;

export interface OutageWait {
  /** Give up at this time (`performance.now()` scale): the last outage error is thrown. */
  deadline: number;
  /** False once nobody waits for the answer any more (the socket closed, the poll's client left). */
  wanted: () => boolean;
}

/**
 * Runs `step` again while it fails with an outage (errors.ts `isOutage`: the store or Redis cannot be
 * reached), until it succeeds, the deadline passes or nobody wants the answer any more; then the last
 * outage error is thrown. Any other error is thrown at once. A tab session (tab-session.ts) holds a Register this way
 * through a short outage instead of answering an error: reference scripts `alert()` on any non-200 poll
 * and the older one never reconnects after a WebSocket close (docs/events.md "Outages").
 * `step` must be safe to run again after it failed part-way (TabRegistry.register is).
 */
export async function retryThroughOutage<T>(step: () => Promise<T>, o: OutageWait): Promise<T> {
  // Jitter spreads the tries of many waiting tabs, so a recovering database is not met by all at once.
  for (let pause = OUTAGE_RETRY_BASE_MS; ; pause = Math.min(pause * 2, OUTAGE_RETRY_CAP_MS)) {
    try {
      return await step();
    } catch (err) {
      const left = o.deadline - performance.now();
      if (!isOutage(err) || !o.wanted() || left <= 0) throw err;
      // The last try comes at the deadline itself.
      const wait = Math.min(left, Math.round(pause * (0.5 + Math.random() / 2)));
      await new Promise((resolve) => setTimeout(resolve, wait));
      if (!o.wanted()) throw err;
    }
  }
}
