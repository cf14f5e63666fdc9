/**
 * Settings and the round shape of the callbacks benchmark (bench/callbacks.ts runs it,
 * bench/lib/callbacks/rounds.ts times the rounds, bench/lib/callbacks/report.ts prints them).
 */

/** Callbacks per measured round. */
export const N = 2_000;
/**
 * Uncounted passes (every kind in turn, N each) before the counted rounds. Both paths kept getting
 * faster for ~6 rounds of 2,000 (JIT, TLS sessions, pooled connections, the SQLite log growing to its
 * working size): with the two short passes used before, the first counted outbox round ran at 2/3 of
 * the later ones. A few seconds in all; the budget is about a node that has been delivering a while.
 */
export const WARMUP_PASSES = 6;
/** Rounds of each kind, taken in turn (plain, outbox, storeless, enqueue, plain ...); the rate is the median. */
export const ROUNDS = 5;
/** The order the kinds are taken in, within a warm-up pass and within a counted round. */
export const KINDS = ['plain', 'outbox', 'storeless', 'enqueue'] as const;
/**
 * Requests in flight for the plain POSTs, and signatures in flight (producers) for the outbox: as many
 * signing requests at once as plain requests.
 */
export const PLAIN_CONCURRENCY = 16;
/**
 * The budget: outbox callbacks/s at least this share of the plain POST rate, same run. A durable,
 * Ed25519-signed callback (settle + callback in one write, sign, POST, mark delivered) costs ~2.5x a plain
 * POST's CPU while the receiver shares the two cores, so 0.4, not the 0.5 it was (docs/benchmarks.md#callbacks).
 */
export const BUDGET_SHARE = 0.4;
/** A round whose callbacks are not all delivered by then fails the benchmark. */
export const ROUND_TIMEOUT_MS = 60_000;

/** One measured round of one kind. */
export interface Round {
  /**
   * outbox: settle + callback, 16 producers; storeless: the same with the store's two writes (settle,
   * delivered) answered without touching SQLite, the outbox's ceiling on this machine; enqueue:
   * deliverer.enqueue awaited one by one (the earlier benchmark); plain: undici POSTs.
   */
  kind: 'outbox' | 'storeless' | 'enqueue' | 'plain';
  count: number;
  ms: number;
  rate: number;
  /** Per-callback time from enqueue (or request start) to delivered, ms. */
  p50: number;
  p99: number;
  max: number;
  cpuPercent: number;
  receiverCpuPercent: number;
  otherPercent: number;
  errors: number;
}
