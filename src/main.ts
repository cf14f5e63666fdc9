import { availableParallelism } from 'node:os';
import { buildApp } from './app.js';
import { ConfigError, loadConfig } from './config/load.js';
import type { Config } from './config/schema.js';
import { listenFailureMessage } from './console/listen-failure.js';
import { chooseLogFormat, logStreamFor } from './console/log-output.js';
import { listeningText } from './console/start-line.js';
import { missingOneCoreFlags, missingServiceFlags } from './node-flags.js';

/** Beyond shutdownTimeoutSeconds, for what closes after the connections (deliverer, XMPP, store). */
const SHUTDOWN_GRACE_SECONDS = 15;

/** Process entry: configuration, the app, listening, and a clean stop on SIGINT/SIGTERM. */
async function main(): Promise<void> {
  const config = loadConfig();
  // Readable lines for a person at a terminal, JSON lines for everything else (docs/configuration.md "Logs").
  const logStream = logStreamFor(chooseLogFormat(config.logFormat, process.stdout.isTTY === true));
  const app = await buildApp(config, logStream ? { logStream } : {});
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
  try {
    // Fastify logs one line per address it listens on; the first is the start line, so it is the first
    // line a person reads (docs/configuration.md "Logs").
    await app.listen({ host: config.host, port: config.port, listenTextResolver: listeningText(config.publicBaseUrl) });
  } catch (err) {
    throw new ListenError(err, config);
  }
  const missing = missingServiceFlags();
  if (missing.length > 0) app.log.info({ missing }, 'Node.js runs without the flags the service is started with (docs/deployment.md "Node.js flags")');
  const oneCore = missingOneCoreFlags(availableParallelism());
  if (oneCore.length > 0) app.log.info({ missing: oneCore }, 'this process may use one core only; a node confined to one core should also be started with these flags (docs/deployment.md "Node.js flags")');
}

/** The service could not listen; carries the configuration the explanation names. */
class ListenError extends Error {
  constructor(
    override readonly cause: unknown,
    readonly config: Config,
  ) {
    super('listen failed');
  }
}

// Exit status (docs/configuration.md "Start and exit"): 2 for configuration a restart cannot fix, 1 for the
// rest, including a port in use (the previous process may still be stopping: a supervisor may retry).
main().catch((err: unknown) => {
  if (err instanceof ConfigError) {
    console.error(err.message);
    process.exit(2);
  }
  if (err instanceof ListenError) {
    console.error(listenFailureMessage(err.cause, err.config) ?? err.cause);
    process.exit(1);
  }
  console.error(err);
  process.exit(1);
});
