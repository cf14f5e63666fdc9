import type { Logger } from 'pino';

/** The oldest Redis the scripts run on: `PEXPIRE … GT/NX` (7.0), `ZMSCORE` (6.2), sharded pub/sub (7.0). */
export const MIN_REDIS_VERSION: readonly [number, number] = [7, 0];

/** `redis_version` of an `INFO server` answer as [major, minor], or undefined when it has none. */
export function redisVersion(info: string): [number, number] | undefined {
  const match = /^redis_version:(\d+)\.(\d+)/m.exec(info);
  return match ? [Number(match[1]), Number(match[2])] : undefined;
}

/** Whether `version` is older than MIN_REDIS_VERSION. */
export function tooOld([major, minor]: readonly [number, number]): boolean {
  return major < MIN_REDIS_VERSION[0] || (major === MIN_REDIS_VERSION[0] && minor < MIN_REDIS_VERSION[1]);
}

/**
 * Asks a server its version each time a connection becomes ready, and logs an error naming it when it is too
 * old: every event publish would otherwise fail with a script error that does not say why
 * (docs/redis.md "Connections"). A server that cannot be asked is not judged.
 */
export function checkVersionOnReady(connection: { on(event: 'ready', listener: () => void): unknown; info(section: 'server'): Promise<string> }, what: string, log: Pick<Logger, 'error'>): void {
  connection.on('ready', () => {
    connection.info('server').then(
      (info) => {
        const version = redisVersion(info);
        if (version && tooOld(version)) {
          log.error({ version: version.join('.'), needed: MIN_REDIS_VERSION.join('.') }, `${what} ${version.join('.')} is too old: tabwire needs ${MIN_REDIS_VERSION.join('.')} or later, and its event streams fail until it is upgraded`);
        }
      },
      () => undefined,
    );
  });
}
