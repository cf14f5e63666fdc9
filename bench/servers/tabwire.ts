/**
 * Child server: the real tabwire app (buildApp with its own SQLite file).
 * Args: <port> <sqliteFile> [logLevel] [no-encoder-thread]. The port must be the real one: signUrl is
 * built from it. `no-encoder-thread` sets qrEncoderThread off (every request encodes its own code).
 * Without a log level the log is silent; with one (e.g. `info`, the default of config) every line is
 * written synchronously to /dev/null, which is what logging to stdout costs the process short of the
 * reader on the other end.
 */
import pino from 'pino';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config/load.js';
import type { ConfigInput } from '../../src/config/schema.js';
import { serveAsChild } from './protocol.js';
import { encodeReference } from './reference.js';

await serveAsChild(async () => {
  const port = Number(process.argv[2]);
  const sqliteFile = process.argv[3];
  const logLevel = (process.argv[4] ?? 'silent') as ConfigInput['logLevel'];
  const encoderThread = process.argv[5] !== 'no-encoder-thread';
  if (!Number.isInteger(port) || port <= 0 || !sqliteFile) throw new Error('usage: tabwire.ts <port> <sqliteFile> [logLevel] [no-encoder-thread]');
  // An empty environment: stray TABWIRE_* variables must not change what is measured. All load comes
  // from one loopback address: the per-address QR limit is raised to its maximum so the limiter is
  // still consulted on every request (its cost is measured) but never refuses (it would at 6,000/min).
  const config = loadConfig({}, { port, sqliteFile, logLevel, qrRequestsPerAddressPerMinute: 10_000_000, qrEncoderThread: encoderThread });
  const logStream = logLevel === 'silent' ? undefined : pino.destination({ dest: '/dev/null', sync: true });
  const app = await buildApp(config, logStream ? { logStream } : {});
  await app.listen({ host: '127.0.0.1', port });
  return { port, close: () => app.close() };
}, { reference: encodeReference });
