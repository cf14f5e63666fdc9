/**
 * Settings and the round shape of the XMPP throughput benchmark (bench/xmpp-throughput.ts runs it,
 * bench/lib/xmpp-throughput/rounds.ts measures the rounds, bench/lib/xmpp-throughput/report.ts prints them).
 */

/** XMPP users logged in from this process; messages go round-robin over them. */
export const USERS = 4;
/**
 * Messages per measured round: about 2 s at the rates of this machine. Rounds of 10,000 lasted 0.3-0.5 s
 * once the path got faster, and two bare rounds of one run differed by up to a third.
 */
export const PER_USER = 10_000;
/** Messages per measured round, over all users. */
export const N = USERS * PER_USER;
/** Uncounted messages before each measured round (JIT in the new child, socket buffers, Prosody's caches). */
export const WARMUP = 10_000;
/** tabwire rounds; each sits between two bare rounds (bare, tabwire, bare, ... bare). */
export const TABWIRE_ROUNDS = 3;
/** Messages sent but not yet counted at the receiving end, over all clients. */
export const WINDOW = 200;
/** WebSocket tabs tabwire delivers to, each with its own session and its own chat handler. */
export const N_TABS = 50;
/** The budget: tabwire messages/s at least this share of the bare-component rate. */
export const BUDGET_SHARE = 0.8;
/** A round (or its warm-up) whose messages are not all counted by then fails the benchmark. */
export const ROUND_TIMEOUT_MS = 60_000;

/** One measured round: its rate, and the CPU of each process over its counted window (% of one core). */
export interface Round {
  kind: 'bare' | 'tabwire';
  count: number;
  ms: number;
  rate: number;
  benchCpu: number;
  receiverCpu: number;
  prosodyCpu: number;
  other: number;
}
