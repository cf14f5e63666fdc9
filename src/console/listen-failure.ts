import type { Config } from '../config/schema.js';

/**
 * One line that tells an operator why the service could not listen and which setting changes it,
 * instead of a stack trace (docs/configuration.md "Start and exit"). Undefined for other errors.
 */
export function listenFailureMessage(err: unknown, config: Pick<Config, 'host' | 'port'>): string | undefined {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  const where = `${config.host.includes(':') ? `[${config.host}]` : config.host}:${config.port}`;
  switch (code) {
    case 'EADDRINUSE':
      return `tabwire: cannot listen on ${where}: port ${config.port} is already in use (another process listens there); stop it, or choose another port with TABWIRE_PORT (config key "port")`;
    case 'EACCES':
      return `tabwire: not allowed to listen on port ${config.port} (ports below 1024 need privileges); choose a port from 1024 up with TABWIRE_PORT (config key "port"), or put a reverse proxy on port ${config.port}`;
    case 'EADDRNOTAVAIL':
      return `tabwire: cannot listen on ${config.host}, which is no address of this machine; set TABWIRE_HOST (config key "host") to one of its addresses, e.g. 127.0.0.1`;
    default:
      return undefined;
  }
}
