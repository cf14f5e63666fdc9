/**
 * Child server for bench/xmpp-throughput.ts: the real tabwire app (buildApp, its own SQLite file,
 * silent log, open registration) attached as an XEP-0114 component to the private Prosody.
 * Args: <port> <sqliteFile> <xmppService> <xmppComponentDomain> <xmppComponentSecret>.
 */
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config/load.js';
import { serveAsChild } from './protocol.js';

await serveAsChild(async () => {
  const [portArg, sqliteFile, xmppService, xmppComponentDomain, xmppComponentSecret] = process.argv.slice(2);
  const port = Number(portArg);
  if (!Number.isInteger(port) || port <= 0 || !sqliteFile || !xmppService || !xmppComponentDomain || !xmppComponentSecret) {
    throw new Error('usage: xmpp-tabwire.ts <port> <sqliteFile> <xmppService> <xmppComponentDomain> <xmppComponentSecret>');
  }
  // An empty environment: stray TABWIRE_* variables must not change what is measured.
  const config = loadConfig({}, { port, sqliteFile, logLevel: 'silent', openRegistration: true, xmppService, xmppComponentDomain, xmppComponentSecret });
  const app = await buildApp(config);
  await app.listen({ host: '127.0.0.1', port });
  return { port, close: () => app.close() };
});
