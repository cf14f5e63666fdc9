/**
 * Child server for the OpenID Connect login benchmark (bench/oidc-login.ts): the real tabwire app (buildApp,
 * its own SQLite file, silent log, the OpenID Provider on as by default), nothing added.
 * Args: one JSON object {port, sqliteFile}. The port must be the real one: the issuer and every signUrl are
 * built from it. All load comes from one loopback address, so the per-address limits the logins pass through
 * (QR requests, token requests) are raised to their maxima: the limiters are still consulted on every request
 * (their cost is measured) but never refuse.
 */
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config/load.js';
import { serveAsChild } from './protocol.js';

await serveAsChild(async () => {
  const args = JSON.parse(process.argv[2] ?? '{}') as { port?: number; sqliteFile?: string };
  if (!Number.isInteger(args.port) || !args.sqliteFile) throw new Error('usage: oidc-tabwire.ts <json args {port, sqliteFile}>');
  const port = args.port!;
  // An empty environment: stray TABWIRE_* variables must not change what is measured.
  const config = loadConfig(
    {},
    { port, sqliteFile: args.sqliteFile, logLevel: 'silent', qrRequestsPerAddressPerMinute: 10_000_000, oidcTokenRequestsPerAddressPerMinute: 1_000_000 },
  );
  const app = await buildApp(config);
  await app.listen({ host: '127.0.0.1', port });
  return { port, close: () => app.close() };
});
