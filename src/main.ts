import { availableParallelism } from 'node:os';
import { buildApp } from './app.js';
import { Drain } from './health/drain.js';
import { ConfigError, loadConfig } from './config/load.js';
import type { Config } from './config/schema.js';
import { listenFailureMessage } from './console/listen-failure.js';
import { chooseLogFormat, logStreamFor } from './console/log-output.js';
import { listeningText } from './console/start-line.js';
import { OIDC_MOUNT } from './oidc/provider.js';
import { missingOneCoreFlags, missingServiceFlags } from './node-flags.js';

/** Beyond shutdownTimeoutSeconds, for what closes after the connections (deliverer, XMPP, store). */
const SHUTDOWN_GRACE_SECONDS = 15;

/** Process entry: configuration, the app, listening, and a clean stop on SIGINT/SIGTERM. */
async function main(): Promise<void> {
  const config = loadConfig();
  // Readable lines for a person at a terminal, JSON lines for everything else (docs/configuration.md "Logs").
  const logStream = logStreamFor(chooseLogFormat(config.logFormat, process.stdout.isTTY === true));
  const drain = new Drain();
  const app = await buildApp(config, { drain, ...(logStream ? { logStream } : {}) });
  let stopping = false;
  let endDrain: (() => void) | undefined;
  const stop = async (signal: string) => {
    if (stopping) {
      endDrain?.(); // a second signal (Ctrl-C twice) cuts the drain short
      return;
    }
    stopping = true;
    if (config.shutdownDrainSeconds > 0) {
      // Leave the load balancer first: /readyz says 503 while everything else is served as before.
      drain.begin();
      app.log.info({ signal, seconds: config.shutdownDrainSeconds }, 'draining: /readyz answers 503 until shutdown begins');
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, config.shutdownDrainSeconds * 1000);
        endDrain = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
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
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
  try {
    // Fastify logs one line per address it listens on; the first is the start line, so it is the first
    // line a person reads (docs/configuration.md "Logs").
    await app.listen({ host: config.host, port: config.port, listenTextResolver: listeningText(config.publicBaseUrl, config.oidc ? `${config.publicBaseUrl}${OIDC_MOUNT}` : undefined) });
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
