import type { RedisConnection } from '../redis/connection.js';
import { RedisScript } from '../redis/script.js';
import type { Lease, LeaseHold } from './lease.js';

/**
 * KEYS: hold, fence. ARGV: holder, TTL ms. The hold's value is `<token> <holder>`. Held by another:
 * nil. Held by us: extended, same token. Free: the fence counter gives the next token (SET NX PX in
 * effect, with the token made in the same atomic step).
 */
const ACQUIRE = new RedisScript(`
local current = redis.call('GET', KEYS[1])
if current then
  local space = string.find(current, ' ', 1, true)
  if string.sub(current, space + 1) ~= ARGV[1] then return false end
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return tonumber(string.sub(current, 1, space - 1))
end
local token = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], token .. ' ' .. ARGV[1], 'PX', ARGV[2])
return token
`);

/** KEYS: hold. ARGV: `<token> <holder>`, TTL ms. Compare-and-extend. */
const RENEW = new RedisScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
`);

/** KEYS: hold. ARGV: `<token> <holder>`. Compare-and-delete. */
const RELEASE = new RedisScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
return 1
`);

/**
 * A lease in Redis: `lease:<name>:hold` = `<token> <holder>` with a PX expiry, and `lease:<name>:fence`,
 * the token counter (no TTL; one small integer per lease name). Expiry is timed by Redis' clock alone,
 * so the nodes' clocks never matter. A holder id holds once: two Lease objects with the same holder
 * id are the same holder (give every node its own id).
 */
export class RedisLease implements Lease {
  readonly scope = 'cluster';
  constructor(
    private readonly redis: RedisConnection,
    readonly name: string,
    readonly holder: string,
    readonly ttlMs: number,
  ) {
    if (holder.includes(' ')) throw new Error('a lease holder id has no spaces');
  }

  async acquire(): Promise<number | undefined> {
    const token = await ACQUIRE.run(this.redis.client, [this.holdKey(), this.fenceKey()], [this.holder, this.ttlMs]);
    return token === null ? undefined : Number(token);
  }

  async renew(token: number): Promise<boolean> {
    return (await RENEW.run(this.redis.client, [this.holdKey()], [`${token} ${this.holder}`, this.ttlMs])) === 1;
  }

  async release(token: number): Promise<boolean> {
    return (await RELEASE.run(this.redis.client, [this.holdKey()], [`${token} ${this.holder}`])) === 1;
  }

  async current(): Promise<LeaseHold | undefined> {
    const value = await this.redis.client.get(this.holdKey());
    if (value === null) return undefined;
    const space = value.indexOf(' ');
    return { token: Number(value.slice(0, space)), holder: value.slice(space + 1) };
  }

  private holdKey(): string {
    return this.redis.key('lease', this.name, 'hold');
  }

  private fenceKey(): string {
    return this.redis.key('lease', this.name, 'fence');
  }
}
