import type { Logger } from 'pino';
import { TabwireError } from '../errors.js';
import { addressKey, type TabAddress } from '../protocol/address.js';
import type { RedisConnection } from '../redis/connection.js';
import { RedisScript } from '../redis/script.js';
import type { HandlerRegistration, HandlerRegistry, IsLive, RegisterOutcome } from './handlers.js';
import type { InboundMessage } from '../protocol/xmpp-message.js';
import { candidateKeys, selectorKey, type Selector } from './selector.js';

/** The field of a tab's hash that names the account whose handlers it carries. */
const OWNER_FIELD = '@account';

/**
 * KEYS: tab hash, selector set, sequence counter. ARGV: account, selector key, fn, max per tab, TTL ms,
 * address key. The same decisions as MemoryHandlerRegistry.register, taken atomically, so concurrent
 * registrations on any nodes never exceed the bound nor mix accounts on one tab.
 */
const REGISTER = new RedisScript(`
local owner = redis.call('HGET', KEYS[1], '${OWNER_FIELD}')
if owner and owner ~= ARGV[1] then return 'tab_owned_by_other_account' end
local exists = redis.call('HEXISTS', KEYS[1], ARGV[2]) == 1
if ARGV[3] == '' then
  if exists then
    redis.call('HDEL', KEYS[1], ARGV[2])
    redis.call('ZREM', KEYS[2], ARGV[6])
    if redis.call('HLEN', KEYS[1]) <= 1 then redis.call('DEL', KEYS[1]) end
  end
  return 'removed'
end
local count = redis.call('HLEN', KEYS[1])
if owner then count = count - 1 end
if not exists and count >= tonumber(ARGV[4]) then return 'too_many_handlers' end
local seq = redis.call('INCR', KEYS[3])
redis.call('HSET', KEYS[1], '${OWNER_FIELD}', ARGV[1], ARGV[2], seq .. '|' .. ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
redis.call('ZADD', KEYS[2], seq, ARGV[6])
redis.call('PEXPIRE', KEYS[2], ARGV[5])
return 'registered'
`);

/** What a RedisHandlerRegistry works with. */
export interface RedisHandlersDeps {
  redis: RedisConnection;
  log: Pick<Logger, 'warn'>;
}

/** How many handlers a RedisHandlerRegistry keeps per tab, and for how long. */
export interface RedisHandlersSettings {
  /** Handlers one tab may carry (docs/configuration.md `handlersPerTab`). */
  maxPerTab: number;
  /** How long registrations outlive the last sign of life of their tab. */
  ttlMs: number;
}

/**
 * The handler registry of a cluster, in Redis, so a handler registered through any node is matched on
 * the node that holds the XMPP component (docs/redis.md "Keys"):
 * - `handlers:tab:<session>:<tab>`: hash, selector key → `<seq>|<fn>`, plus the owning account; it
 *   bounds the tab (`handlersPerTab`) and is what `forgetTab` deletes;
 * - `handlers:sel:<account>:<selector key>`: sorted set of the tabs with that selector, by seq (newest
 *   last), what `match` reads: at most eight sets per message, as in memory;
 * - `handlers:seq`: the registration counter (the newest registration wins a tie).
 * Both kinds of keys expire `ttlMs` after the last register or `touchTabs` (every write sets the same
 * TTL from now, so a plain PEXPIRE never shortens one), so the handlers of tabs held by a node that
 * died go by themselves. A set member whose tab hash lost it (forgotten, expired)
 * is stale: `match` skips it and removes it.
 */
export class RedisHandlerRegistry implements HandlerRegistry {
  private readonly redis: RedisConnection;
  private readonly log: Pick<Logger, 'warn'>;
  private readonly maxPerTab: number;
  private readonly ttlMs: number;

  constructor({ redis, log }: RedisHandlersDeps, { maxPerTab, ttlMs }: RedisHandlersSettings) {
    this.redis = redis;
    this.log = log;
    this.maxPerTab = maxPerTab;
    this.ttlMs = ttlMs;
  }

  async register(accountId: string, address: TabAddress, selector: Selector, fn: string): Promise<RegisterOutcome> {
    const member = addressKey(address);
    const key = selectorKey(selector);
    const keys = [this.tabKey(member), this.selectorSetKey(accountId, key), this.redis.key('handlers', 'seq')];
    try {
      return (await REGISTER.run(this.redis.client, keys, [accountId, key, fn, this.maxPerTab, this.ttlMs, member])) as RegisterOutcome;
    } catch (err) {
      // The page may try again; a registration that timed out may still have been made (it then just exists).
      throw Object.assign(new TabwireError('shared_state_unavailable', 'The handler could not be registered now', { retryAfter: 1 }), { cause: err });
    }
  }

  async match(accountId: string, message: InboundMessage, isLive: IsLive = () => true): Promise<HandlerRegistration | undefined> {
    const selectors = candidateKeys(message);
    const read = this.redis.client.pipeline();
    for (const key of selectors) read.zrevrange(this.selectorSetKey(accountId, key), 0, -1, 'WITHSCORES');
    const sets = (await read.exec()) ?? [];
    // Candidates in precedence order: most specific selector first, newest registration first.
    const candidates: { key: string; member: string; seq: number }[] = [];
    sets.forEach(([err, reply], i) => {
      if (err) throw err;
      const flat = reply as string[];
      for (let j = 0; j < flat.length; j += 2) candidates.push({ key: selectors[i]!, member: flat[j]!, seq: Number(flat[j + 1]) });
    });
    if (candidates.length === 0) return undefined;
    const check = this.redis.client.pipeline();
    for (const c of candidates) check.hmget(this.tabKey(c.member), OWNER_FIELD, c.key);
    const fields = (await check.exec()) ?? [];
    const stale: typeof candidates = [];
    let found: HandlerRegistration | undefined;
    for (const [i, c] of candidates.entries()) {
      const [err, reply] = fields[i]!;
      if (err) throw err;
      const [owner, value] = reply as [string | null, string | null];
      const bar = value?.indexOf('|') ?? -1;
      if (owner !== accountId || value == null || Number(value.slice(0, bar)) !== c.seq) {
        stale.push(c);
        continue;
      }
      const address = parseAddressKey(c.member);
      if (!(await isLive(address))) continue;
      found = { accountId, address, selector: parseSelectorKey(c.key), fn: value.slice(bar + 1), seq: c.seq };
      break;
    }
    if (stale.length > 0) this.removeStale(accountId, stale);
    return found;
  }

  async forgetTab(address: TabAddress): Promise<void> {
    const member = addressKey(address);
    const tab = this.tabKey(member);
    try {
      const fields = await this.redis.client.hgetall(tab);
      const accountId = fields[OWNER_FIELD];
      const tx = this.redis.client.multi().del(tab);
      if (accountId !== undefined) {
        for (const key of Object.keys(fields)) if (key !== OWNER_FIELD) tx.zrem(this.selectorSetKey(accountId, key), member);
      }
      await tx.exec();
    } catch (err) {
      // The tab hash expires by itself within ttlMs; set members left behind are removed by match.
      this.log.warn({ err, tabId: address.tabId }, 'forgetting a tab\'s handlers in Redis failed; they expire by TTL');
    }
  }

  async touchTabs(addresses: readonly TabAddress[]): Promise<void> {
    if (addresses.length === 0) return;
    try {
      const read = this.redis.client.pipeline();
      const members = addresses.map(addressKey);
      for (const member of members) read.hgetall(this.tabKey(member));
      const hashes = (await read.exec()) ?? [];
      const write = this.redis.client.pipeline();
      hashes.forEach(([err, reply], i) => {
        const fields = reply as Record<string, string> | null;
        const accountId = fields?.[OWNER_FIELD];
        if (err || accountId === undefined) return; // no handlers on this tab
        write.pexpire(this.tabKey(members[i]!), this.ttlMs);
        for (const key of Object.keys(fields!)) if (key !== OWNER_FIELD) write.pexpire(this.selectorSetKey(accountId, key), this.ttlMs);
      });
      if (write.length > 0) await write.exec();
    } catch (err) {
      this.log.warn({ err }, 'refreshing handler TTLs in Redis failed; retried at the next refresh');
    }
  }

  private tabKey(member: string): string {
    return this.redis.key('handlers', 'tab', member);
  }

  private selectorSetKey(accountId: string, key: string): string {
    return this.redis.key('handlers', 'sel', accountId, key);
  }

  /** Best effort and not awaited: a stale member costs a look-up at the next match, nothing else. */
  private removeStale(accountId: string, stale: readonly { key: string; member: string; seq: number }[]): void {
    const tx = this.redis.client.pipeline();
    // ZREMRANGEBYSCORE on the exact seq: a member re-registered meanwhile has a new seq and stays.
    for (const c of stale) tx.zremrangebyscore(this.selectorSetKey(accountId, c.key), c.seq, c.seq);
    tx.exec().catch(() => undefined);
  }
}

/** The inverse of protocol/address.ts `addressKey`; tab ids never contain ':'. */
function parseAddressKey(member: string): TabAddress {
  const colon = member.lastIndexOf(':');
  return { session: member.slice(0, colon), tabId: member.slice(colon + 1) };
}

function parseSelectorKey(key: string): Selector {
  const [localName, namespace, type] = JSON.parse(key) as [string | null, string | null, string | null];
  return { localName, namespace, type };
}
