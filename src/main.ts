import { buildApp } from './app.js';
import { ConfigError, loadConfig } from './config/load.js';

/** Beyond shutdownTimeoutSeconds, for what closes after the connections (deliverer, XMPP, store). */
const SHUTDOWN_GRACE_SECONDS = 15;

/** Process entry: configuration, the app, listening, and a clean stop on SIGINT/SIGTERM. */
async function main(): Promise<void> {
  const config = loadConfig();
  const app = await buildApp(config);
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    app.log.info({ signal }, 'shutting down');
    // The app cuts connections at shutdownTimeoutSeconds; this is the last resort if closing the rest
    // (callback attempts in flight, the XMPP link, the store) hangs.
    setTimeout(() => {
      app.log.error({ signal }, 'shutdown did not finish in time; exiting');
      process.exit(1);
    }, (config.shutdownTimeoutSeconds + SHUTDOWN_GRACE_SECONDS) * 1000).unref();
    app.close().then(
      () => process.exit(0),
      (err: unknown) => {
        app.log.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
  await app.listen({ host: config.host, port: config.port });
  app.log.info({ publicBaseUrl: config.publicBaseUrl }, 'tabwire is listening');
}

main().catch((err: unknown) => {
  if (err instanceof ConfigError) {
    console.error(err.message);
    process.exit(2);
  }
  console.error(err);
  process.exit(1);
});
