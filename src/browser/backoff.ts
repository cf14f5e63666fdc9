/**
 * Exponential backoff with full jitter (AWS Architecture Blog, "Exponential Backoff And Jitter"):
 * each delay is uniform in [0, min(cap, base * 2^attempt)). Full jitter spreads the reconnects of
 * every tab of a restarted server over the whole window instead of a thundering herd at 5 s (the
 * reference client's fixed retry).
 */
export interface BackoffOptions {
  /** Ceiling of the first delay, ms. */
  baseMs?: number;
  /** Largest ceiling, ms. */
  capMs?: number;
  /** Uniform in [0, 1); Math.random in a browser, a fixed sequence in tests. */
  random?: () => number;
}

export const DEFAULT_BACKOFF = { baseMs: 500, capMs: 30_000 } as const;

// 2^16 * 500 ms is far past any cap; stopping the exponent keeps the arithmetic finite.
const MAX_EXPONENT = 16;

export class Backoff {
  private attempt = 0;
  private readonly baseMs: number;
  private readonly capMs: number;
  private readonly random: () => number;

  constructor(options: BackoffOptions = {}) {
    this.baseMs = options.baseMs ?? DEFAULT_BACKOFF.baseMs;
    this.capMs = options.capMs ?? DEFAULT_BACKOFF.capMs;
    this.random = options.random ?? Math.random;
  }

  /** The next delay in ms, always within [0, capMs]; each call widens the window until the cap. */
  next(): number {
    const ceiling = Math.min(this.capMs, this.baseMs * 2 ** Math.min(this.attempt, MAX_EXPONENT));
    if (this.attempt < MAX_EXPONENT) this.attempt++;
    // A random() outside [0, 1) (a bad fake, NaN) must still not escape the bounds.
    const raw = this.random();
    const r = raw > 0 ? Math.min(raw, 1) : 0;
    return Math.floor(r * ceiling);
  }

  /** Back to the first window, after a connection proved stable. */
  reset(): void {
    this.attempt = 0;
  }

  /** How many delays were handed out since the last reset. */
  get attempts(): number {
    return this.attempt;
  }
}
