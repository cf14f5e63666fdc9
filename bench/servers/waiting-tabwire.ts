/**
 * Child server for the waiting-people benchmark and the soak: the real tabwire app (buildApp, its
 * own SQLite file, log level silent), configured like a deployment through TABWIRE_* variables.
 * Nothing is added to the app: the benchmark reads CPU and memory from /proc.
 *
 * Args: one JSON object {port, sqliteFile, env}. `env` holds the TABWIRE_* variables the benchmark
 * sets (its QR rate limits); they go through loadConfig's environment parsing and validation, as a
 * deployment's would. Nothing else from this process's environment is read, so stray TABWIRE_*
 * variables of the shell cannot change what is measured.
 */
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
  await app.listen({ host: '127.0.0.1', port: args.port });
  return { port: args.port, close: () => app.close() };
});
