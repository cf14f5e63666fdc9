import { REDIS_COMMAND_TIMEOUT_MS } from './connection.js';

/**
 * `promise`, or a rejection with ioredis' own "Command timed out" once `ms` passed (redis/errors.ts counts it
 * as Redis unavailable). A Redis Cluster client bounds a command only on a shard's connection: while it
 * reaches no shard at all, its offline queue holds commands without a limit, and a request would hang. As
 * with any timed-out command, the command itself may still run later (docs/redis.md "During a Redis outage").
 */
export function withDeadline<T>(promise: Promise<T>, ms = REDIS_COMMAND_TIMEOUT_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('Command timed out (no Redis Cluster shard reachable)')), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/**
 * `target` with every method that answers a promise bounded by `withDeadline` (the broker's scripts, SPUBLISH,
 * PING …); other members as they are. `onRejected` sees each such command's error before its caller does.
 */
export function boundedCommands<T extends object>(target: T, ms = REDIS_COMMAND_TIMEOUT_MS, onRejected?: (err: unknown) => void): T {
  return new Proxy(target, {
    get(object, property, receiver) {
      const value: unknown = Reflect.get(object, property, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        const result: unknown = (value as (...a: unknown[]) => unknown).apply(object, args);
        if (!(result instanceof Promise)) return result;
        const bounded = withDeadline(result, ms);
        return onRejected ? bounded.catch((err: unknown) => {
          onRejected(err);
          throw err;
        }) : bounded;
      };
    },
  });
}
