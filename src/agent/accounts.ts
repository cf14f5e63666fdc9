import { randomUUID } from 'node:crypto';
import type { Clock } from '../clock.js';
import { TabwireError } from '../errors.js';
import type { Account, AccountStore } from '../store/stores.js';
import { DUMMY_HASH_PROMISE, hashPassword, verifyPassword } from './passwords.js';
import type { LoginThrottle } from '../throttle/throttle.js';
import type { AgentClaims, IssuedToken, TokenService } from './tokens.js';

/** User names are XMPP local parts (docs/agent-api.md: the account's JID is `user@<component domain>`). */
export const USER_NAME_PATTERN = '^[a-z0-9][a-z0-9._-]{1,63}$';

/** What accounts call: their store, the token service, time, the login throttles (all of them dependencies). */
export interface AccountsDeps {
  accounts: AccountStore;
  tokens: TokenService;
  clock: Clock;
  /** Login attempts per account name. */
  accountThrottle: LoginThrottle;
  /** Failed logins per client address. */
  addressThrottle: LoginThrottle;
  /** Told of every login refused by a throttle (metrics). */
  onLimited?: (limit: 'login_account' | 'login_address') => void;
}

/** Agent accounts: creation, password login, token refresh (docs/agent-api.md). */
export class Accounts {
  constructor(private readonly deps: AccountsDeps) {}

  async create(input: { userName: string; password: string; eMail?: string }): Promise<Account> {
    const account: Account = {
      id: randomUUID(),
      userName: input.userName,
      passwordHash: await hashPassword(input.password),
      email: input.eMail ?? null,
      state: 'active',
      createdAt: this.deps.clock.now(),
    };
    if (!(await this.deps.accounts.insert(account))) throw new TabwireError('account_exists', `The user name "${input.userName}" is taken`);
    return account;
  }

  /**
   * Checks the password and issues a token. Wrong user and wrong password get the same answer in
   * the same time; attempts are throttled per account and per address (429 with Retry-After). The
   * attempt takes its throttle slots before the scrypt check, so N concurrent wrong passwords
   * yield at most `limit` 401s and 429s for the rest (docs/agent-api.md "Throttling").
   */
  async login(input: { userName: string; password: string; seconds: number }, address: string): Promise<IssuedToken> {
    const accountKey = `account:${input.userName}`;
    const addressKey = `address:${address}`;
    const { accountThrottle, addressThrottle } = this.deps;
    // Each take is atomic (checked and counted in one step, on every node sharing the throttle); a slot
    // taken from one throttle while the other refused is given back.
    const [accountWait, addressWait] = await Promise.all([accountThrottle.take(accountKey), addressThrottle.take(addressKey)]);
    if (accountWait > 0 || addressWait > 0) {
      if (accountWait === 0) await accountThrottle.release(accountKey);
      if (addressWait === 0) await addressThrottle.release(addressKey);
      this.deps.onLimited?.(accountWait > 0 ? 'login_account' : 'login_address');
      // RFC 9110 §10.2.3: Retry-After in whole seconds, rounded up so the client never comes back early.
      throw new TabwireError('rate_limited', 'Too many login attempts; try again later', { retryAfter: Math.ceil(Math.max(accountWait, addressWait) / 1000) });
    }
    let outcome: 'failed' | 'succeeded' | 'undecided' = 'undecided';
    try {
      const account = await this.deps.accounts.byUserName(input.userName);
      const ok = await verifyPassword(input.password, account?.passwordHash ?? (await DUMMY_HASH_PROMISE));
      if (!account || !ok) {
        outcome = 'failed';
        throw new TabwireError('credentials_invalid');
      }
      if (account.state !== 'active') throw new TabwireError('account_disabled');
      outcome = 'succeeded';
      return await this.deps.tokens.issue(account, input.seconds);
    } finally {
      // A failure keeps its slots. The right password clears the account's count (the person is back)
      // and gives the address its slot back; anything else (disabled, store error) proved nothing.
      if (outcome === 'succeeded') {
        await Promise.all([accountThrottle.reset(accountKey), addressThrottle.release(addressKey)]);
      } else if (outcome === 'undecided') {
        await Promise.all([accountThrottle.release(accountKey), addressThrottle.release(addressKey)]);
      }
    }
  }

  /** A new token for the bearer of a valid one. */
  async refresh(claims: AgentClaims, seconds: number): Promise<IssuedToken> {
    return this.deps.tokens.issue({ id: claims.accountId, userName: claims.userName }, seconds);
  }

  /** A token for an account by id (session-proxy mode, the CLI); undefined when it is gone or disabled. */
  async tokenFor(accountId: string, seconds: number): Promise<IssuedToken | undefined> {
    const account = await this.deps.accounts.byId(accountId);
    if (!account || account.state !== 'active') return undefined;
    return this.deps.tokens.issue(account, seconds);
  }
}
