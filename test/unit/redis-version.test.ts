import { EventEmitter } from 'node:events';
import type { Logger } from 'pino';
import { describe, expect, it } from 'vitest';
import { checkVersionOnReady, redisVersion, tooOld } from '../../src/redis/version.js';

describe('Redis version check (docs/redis.md "Connections")', () => {
  it('reads redis_version from INFO server and finds what is older than 7.0', () => {
    expect(redisVersion('# Server\r\nredis_version:7.0.15\r\nredis_mode:cluster\r\n')).toEqual([7, 0]);
    expect(redisVersion('redis_version:6.2.14\r\n')).toEqual([6, 2]);
    expect(redisVersion('# Server\r\n')).toBeUndefined();
    expect(tooOld([6, 2])).toBe(true);
    expect(tooOld([7, 0])).toBe(false);
    expect(tooOld([7, 4])).toBe(false);
    expect(tooOld([8, 0])).toBe(false);
  });

  it('logs an error naming the version each time a connection to a too old server becomes ready, and nothing for a new one', async () => {
    const errors: string[] = [];
    const log = { error: (_o: unknown, message: string) => void errors.push(message) } as unknown as Pick<Logger, 'error'>;
    const connect = (version: string) => {
      const connection = Object.assign(new EventEmitter(), { info: async () => `# Server\r\nredis_version:${version}\r\n` });
      checkVersionOnReady(connection, 'Redis', log);
      return connection;
    };
    const old = connect('6.2.14');
    old.emit('ready');
    await new Promise((resolve) => setImmediate(resolve));
    expect(errors).toEqual(['Redis 6.2 is too old: tabwire needs 7.0 or later, and its event streams fail until it is upgraded']);
    connect('7.2.4').emit('ready');
    await new Promise((resolve) => setImmediate(resolve));
    expect(errors).toHaveLength(1);
  });
});
