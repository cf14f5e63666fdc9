/**
 * Settings of the QR issuance benchmark (bench/qr-issuance.ts runs it; its in-process rows, HTTP rows,
 * encodeQr reference and report read them from here). See docs/benchmarks.md.
 */

/** HTTP rows; with these settings the whole benchmark takes about 70 s on 2 cores (plus retries on a busy machine). */
export const HTTP = { connections: 32, warmupMs: 500, durationMs: 3_000 };
/** In-process rows: 5 slices of 250 ms each, taken in turn, after a 200 ms warm-up. */
export const IN_PROCESS = { rounds: 5, sliceMs: 250, warmupMs: 200 };
/** The encodeQr reference, measured in the server process next to every HTTP measurement. */
export const REFERENCE = { warmupMs: 150, durationMs: 800 };
/**
 * Load on a fresh tabwire before anything is counted (text and base64 2 s each, image and .png 1 s
 * each): a new process needs several seconds of traffic before V8 has optimised its hot paths; with
 * 2.4 s the first measured mode still came out up to 15 % slow.
 */
export const SERVER_WARMUP_MS = { text: 2_000, base64: 2_000, image: 1_000, png: 1_000 };
/** Rows where other processes took more than this (% of a core) are flagged as unreliable. */
export const OTHER_CPU_LIMIT = 10;
/** Longest wait for a quiet machine before the first measurement. */
export const QUIET_WAIT_MS = 10_000;
/** Re-measurements allowed per run when other processes disturb a window (bounds the run time). */
export const MAX_RETRIES = 4;
/** Largest accepted difference between the two references around one HTTP measurement. */
export const DRIFT_LIMIT = 0.1;
/** The budgets: issuance in each mode at least this share of the bare Fastify route's rate, same run. */
export const BUDGET_SHARE: Record<'text' | 'base64', number> = { text: 0.3, base64: 0.25 };
/** tabwire's default qrModulePixels (src/config/schema.ts). */
export const MODULE_PIXELS = 6;
/** The quiet zone around a code, in modules, as the context line reports it. */
export const QUIET_ZONE = 4;
/** Distinct URLs cycled through, so no run encodes the same text over and over. */
export const URL_POOL = 1024;
/** Image-mode codes issued before the PNG measurement; GET cycles through them. */
export const PNG_CODES = 256;
/** Domain calls in flight at once in the in-process rows (as many as the HTTP rows' connections). */
export const IN_FLIGHT = HTTP.connections;
/** The issuance modes measured, in this order in every table. */
export const MODES = ['text', 'base64', 'image'] as const;
