import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';

/**
 * A Lua script run atomically by Redis (EVALSHA; EVAL when the server does not know it yet, e.g.
 * after a restart emptied its script cache). Every key a script touches is passed in `keys`, as
 * Redis requires for scripts to be safe to route (https://redis.io/docs/latest/develop/interact/programmability/eval-intro/).
 */
export class RedisScript {
  private readonly sha: string;

  constructor(private readonly lua: string) {
    this.sha = createHash('sha1').update(lua).digest('hex');
  }

  async run(redis: Redis, keys: readonly string[], args: readonly (string | number)[] = []): Promise<unknown> {
    try {
      return await redis.evalsha(this.sha, keys.length, ...keys, ...args);
    } catch (err) {
      if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err;
      return redis.eval(this.lua, keys.length, ...keys, ...args);
    }
  }
}
