/**
 * Child server: the real tabwire app (buildApp with its own SQLite file, silent log).
 * Args: <port> <sqliteFile>. The port must be the real one: signUrl is built from it.
 */
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config/load.js';
import { serveAsChild } from './protocol.js';
import { encodeReference } from './reference.js';

await serveAsChild(async () => {
  const port = Number(process.argv[2]);
  const sqliteFile = process.argv[3];
  if (!Number.isInteger(port) || port <= 0 || !sqliteFile) throw new Error('usage: tabwire.ts <port> <sqliteFile>');
  // An empty environment: stray TABWIRE_* variables must not change what is measured. All load comes
  // from one loopback address: the per-address QR limit is raised to its maximum so the limiter is
  // still consulted on every request (its cost is measured) but never refuses (it would at 6,000/min).
  const config = loadConfig({}, { port, sqliteFile, logLevel: 'silent', qrRequestsPerAddressPerMinute: 10_000_000 });
  const app = await buildApp(config);
  await app.listen({ host: '127.0.0.1', port });
  return { port, close: () => app.close() };
}, { reference: encodeReference });
