/**
 * Child server for the waiting-people benchmark and the soak: the real tabwire app (buildApp, its
 * own SQLite file, log level silent), configured like a deployment through TABWIRE_* variables.
 * The benchmark reads CPU and memory from /proc; one bench-only route is added here, never in src/:
 *
 *   GET /__bench/loop   this process's event-loop delay and garbage collections since the last call
 *                       (p99 and max delay in ms; GC count, total and longest pause in ms), then resets
 *
 * so a window's latency can be told apart: requests queued behind a busy loop, or a pause.
 *
 * Args: one JSON object {port, sqliteFile, env}. `env` holds the TABWIRE_* variables the benchmark
 * sets (its QR rate limits); they go through loadConfig's environment parsing and validation, as a
 * deployment's would. Nothing else from this process's environment is read, so stray TABWIRE_*
 * variables of the shell cannot change what is measured.
 */
import { PerformanceObserver, monitorEventLoopDelay } from 'node:perf_hooks';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config/load.js';
import { serveAsChild } from './protocol.js';

interface Args {
  port: number;
  sqliteFile: string;
  env: Record<string, string>;
}

await serveAsChild(async () => {
  const args = JSON.parse(process.argv[2] ?? '{}') as Args;
  if (!Number.isInteger(args.port) || args.port <= 0 || !args.sqliteFile) throw new Error('usage: waiting-tabwire.ts <json args>');
  const bad = Object.keys(args.env ?? {}).filter((name) => !name.startsWith('TABWIRE_'));
  if (bad.length > 0) throw new Error(`not TABWIRE_* variables: ${bad.join(', ')}`);
  const config = loadConfig(args.env ?? {}, { port: args.port, sqliteFile: args.sqliteFile, logLevel: 'silent' });
  const app = await buildApp(config);
  // Sampled every 1 ms; a sample is the time between two timer runs, so 1 ms is "no delay".
  const loop = monitorEventLoopDelay({ resolution: 1 });
  loop.enable();
  let gc = { count: 0, totalMs: 0, maxMs: 0 };
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      gc.count++;
      gc.totalMs += entry.duration;
      gc.maxMs = Math.max(gc.maxMs, entry.duration);
    }
  }).observe({ entryTypes: ['gc'] });
  app.get('/__bench/loop', async () => {
    const reading = { p99Ms: loop.percentile(99) / 1e6, maxMs: loop.max / 1e6, gc };
    loop.reset();
    gc = { count: 0, totalMs: 0, maxMs: 0 };
    return reading;
  });
  await app.listen({ host: '127.0.0.1', port: args.port });
  return { port: args.port, close: () => app.close() };
});
