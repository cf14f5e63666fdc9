/**
 * Node.js flags the service is started with (`npm start`, `scripts/cluster`, the systemd unit in
 * docs/deployment.md). They cannot be set from inside the process, nor through NODE_OPTIONS.
 *
 * `--no-memory-reducer`: V8's memory reducer runs an extra full, compacting collection when it
 * judges the process idle enough to give memory back. A node holding ~12,000 waiting pages at
 * 6,000 QR codes a second met one every minute or two, and it stopped the event loop for ~115 ms
 * (against ~5-15 ms for V8's ordinary collections there), so every page waiting at that moment
 * got its code late and all of them asked again together two seconds later
 * (docs/benchmarks.md#nodejs-flags). Without it the heap stays at the size the peak load needed, which every
 * bounded store keeps bounded.
 *
 * `--heap-growing-percent=20`: after each full collection V8 lets the old generation grow to a
 * multiple of what survived before it collects again, up to four times. At 10,000 waiting pages that
 * made the process saw between ~280 and ~510 MiB; with 20 % it stayed within 273-281 MiB, for a
 * full collection every 10-20 s of 8-35 ms, GC taking ~3 % of the time (docs/benchmarks.md#nodejs-flags).
 */
export const SERVICE_NODE_FLAGS: readonly string[] = ['--no-memory-reducer', '--heap-growing-percent=20'];

/**
 * Added for a node confined to one core (taskset, a cpuset): `--single-threaded-gc`. V8 does much of
 * its garbage collection on four helper threads beside the event loop. On one core they take turns
 * with it, and during a full collection of a node holding ~12,000 waiting pages they held the core
 * for 100-200 ms at a time while the event loop waited to run (measured per thread with
 * /proc/<pid>/task/<tid>/schedstat): every page waiting then got its code late. With the flag V8
 * collects on the event loop's thread in short steps; there the longest wait fell to ~20 ms
 * (docs/benchmarks.md#nodejs-flags). On more cores the helpers run beside the event loop and
 * the flag would only slow collections down.
 */
export const ONE_CORE_NODE_FLAGS: readonly string[] = ['--single-threaded-gc'];

/** The one-core flags this process lacks while it may run on `cores` cores only (logged at start). */
export const missingOneCoreFlags = (cores: number, execArgv: readonly string[] = process.execArgv): string[] =>
  cores > 1 ? [] : ONE_CORE_NODE_FLAGS.filter((flag) => !execArgv.includes(flag));

/** The service flags this process was started without (logged at start: docs/deployment.md). */
export const missingServiceFlags = (execArgv: readonly string[] = process.execArgv): string[] => SERVICE_NODE_FLAGS.filter((flag) => !execArgv.includes(flag));
