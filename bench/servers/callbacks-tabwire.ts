/**
 * Child server: the real tabwire app in backend mode for the signature -> callback latency run
 * (bench/callback-latency.ts): its own SQLite file, silent log, callbacks to a loopback HTTPS
 * receiver it trusts through callbackCaFile, rate limits out of the way of one load address.
 * Args: one JSON object {port, sqliteFile, caFile}. The port must be the real one: signUrl is built from it.
 */
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config/load.js';
import { serveAsChild } from './protocol.js';

/** The overrides the benchmark also uses to create the signing identity before this child starts. */
export const latencyServerConfig = (port: number, sqliteFile: string, caFile: string) =>
  loadConfig(
    {},
    {
      port,
      sqliteFile,
      logLevel: 'silent',
      callbackCaFile: caFile,
      callbackAllowedHosts: ['127.0.0.1'],
      // All logins come from one loopback address and no session: the per-address limits would refuse them.
      qrRequestsPerAddressPerMinute: 10_000_000,
      qrRequestsPerSessionPerMinute: 1_000_000,
      registrationsPerAddressPerMinute: 1_000_000,
    },
  );

if (process.send) {
  await serveAsChild(async () => {
    const { port, sqliteFile, caFile } = JSON.parse(process.argv[2] ?? '{}') as { port: number; sqliteFile: string; caFile: string };
    if (!Number.isInteger(port) || port <= 0 || !sqliteFile || !caFile) throw new Error('usage: callbacks-tabwire.ts {"port","sqliteFile","caFile"}');
    const app = await buildApp(latencyServerConfig(port, sqliteFile, caFile));
    await app.listen({ host: '127.0.0.1', port });
    return { port, close: () => app.close() };
  });
}
