/**
 * Child server for the OpenID Connect login benchmark (bench/oidc-login.ts): the real tabwire app (buildApp,
 * its own SQLite file, silent log, the OpenID Provider on as by default), nothing added.
 * Args: one JSON object {port, sqliteFile}. The port must be the real one: the issuer and every signUrl are
 * built from it. All load comes from one loopback address, so the per-address limits the logins pass through
 * (QR requests, token requests) are raised to their maxima: the limiters are still consulted on every request
 * (their cost is measured) but never refuse.
 *
 *   GET /__bench/sql   the SQLite statements this thread has run so far (better-sqlite3's run/get/all/iterate,
 *                      counted on the Statement prototype; bench-only, src/ is not changed), in all and by verb
 *                      and table, so the benchmark can count a login's statements
 */
import Database from 'better-sqlite3';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config/load.js';
import { serveAsChild } from './protocol.js';

/** Counts every statement run on this thread, by its verb and table. */
function countStatements(): Map<string, number> {
  const counts = new Map<string, number>();
  const probe = new Database(':memory:');
  const proto = Object.getPrototypeOf(probe.prepare('select 1')) as Record<string, (...args: unknown[]) => unknown>;
  probe.close();
  for (const method of ['run', 'get', 'all', 'iterate']) {
    const original = proto[method]!;
    proto[method] = function (this: { source: string }, ...args: unknown[]) {
      const text = this.source.replace(/\s+/g, ' ').trim();
      const verb = /^(\w+)/.exec(text)?.[1]?.toUpperCase() ?? '?';
      const table = /(?:from|into|update)\s+"?([a-z_]+)"?/i.exec(text)?.[1] ?? '';
      const key = `${verb} ${table}`.trim();
      counts.set(key, (counts.get(key) ?? 0) + 1);
      return original.apply(this, args);
    };
  }
  return counts;
}

await serveAsChild(async () => {
  const statements = countStatements();
  const args = JSON.parse(process.argv[2] ?? '{}') as { port?: number; sqliteFile?: string };
  if (!Number.isInteger(args.port) || !args.sqliteFile) throw new Error('usage: oidc-tabwire.ts <json args {port, sqliteFile}>');
  const port = args.port!;
  // An empty environment: stray TABWIRE_* variables must not change what is measured.
  const config = loadConfig(
    {},
    { port, sqliteFile: args.sqliteFile, logLevel: 'silent', qrRequestsPerAddressPerMinute: 10_000_000, oidcTokenRequestsPerAddressPerMinute: 1_000_000 },
  );
  const app = await buildApp(config);
  app.get('/__bench/sql', async () => Object.fromEntries(statements));
  await app.listen({ host: '127.0.0.1', port });
  return { port, close: () => app.close() };
});
