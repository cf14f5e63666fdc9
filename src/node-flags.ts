/**
 * Node.js flags the service is started with (`npm start`, `scripts/cluster`, the systemd unit in
 * docs/deployment.md). They cannot be set from inside the process, nor through NODE_OPTIONS.
 *
 * `--no-memory-reducer`: V8's memory reducer runs an extra full, compacting collection when it
 * judges the process idle enough to give memory back. A node holding ~12,000 waiting pages at
 * 6,000 QR codes a second met one every minute or two, and it stopped the event loop for ~115 ms
 * (against ~5-15 ms for V8's ordinary collections there), so every page waiting at that moment
 * got its code late and all of them asked again together two seconds later (docs/benchmarks.md
 * "Waiting people"). Without it the heap stays at the size the peak load needed, which every
 * bounded store keeps bounded.
 */
export const SERVICE_NODE_FLAGS: readonly string[] = ['--no-memory-reducer'];

/** The service flags this process was started without (logged at start: docs/deployment.md). */
export const missingServiceFlags = (execArgv: readonly string[] = process.execArgv): string[] => SERVICE_NODE_FLAGS.filter((flag) => !execArgv.includes(flag));
