import { buildApp } from './app.js';
import { ConfigError, loadConfig } from './config/load.js';

/** Process entry: configuration, the app, listening, and a clean stop on SIGINT/SIGTERM. */
async function main(): Promise<void> {
  const config = loadConfig();
  const app = await buildApp(config);
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    app.log.info({ signal }, 'shutting down');
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
