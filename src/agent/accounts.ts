import { randomUUID } from 'node:crypto';
import type { Clock } from '../clock.js';
import { TabwireError } from '../errors.js';
import type { Account, AccountStore } from '../store/stores.js';
import { DUMMY_HASH_PROMISE, hashPassword, verifyPassword } from './passwords.js';
import type { FailureThrottle } from './throttle.js';
import type { AgentClaims, IssuedToken, TokenService } from './tokens.js';

/** User names are XMPP local parts (ARCHITECTURE.md §4: the account's JID is `user@<component domain>`). */
export const USER_NAME_PATTERN = '^[a-z0-9][a-z0-9._-]{1,63}$';

export interface AccountsOptions {
  accounts: AccountStore;
  tokens: TokenService;
  clock: Clock;
  /** Failed logins per account name. */
  accountThrottle: FailureThrottle;
  /** Failed logins per client address. */
  addressThrottle: FailureThrottle;
}

/** Agent accounts: creation, password login, token refresh (ARCHITECTURE.md §4). */
export class Accounts {
  constructor(private readonly o: AccountsOptions) {}

  async create(input: { userName: string; password: string; eMail?: string }): Promise<Account> {
    const account: Account = {
      id: randomUUID(),
      userName: input.userName,
      passwordHash: await hashPassword(input.password),
      email: input.eMail ?? null,
      state: 'active',
      createdAt: this.o.clock.now(),
    };
    if (!(await this.o.accounts.insert(account))) throw new TabwireError('account_exists', `The user name "${input.userName}" is taken`);
    return account;
  }

  /**
   * Checks the password and issues a token. Wrong user and wrong password get the same answer in
   * the same time; failures are throttled per account and per address (429 with Retry-After).
   */
  async login(input: { userName: string; password: string; seconds: number }, address: string): Promise<IssuedToken> {
    const accountKey = `account:${input.userName}`;
    const addressKey = `address:${address}`;
    const wait = Math.max(this.o.accountThrottle.retryAfterMs(accountKey), this.o.addressThrottle.retryAfterMs(addressKey));
    if (wait > 0) {
      throw new TabwireError('rate_limited', 'Too many failed logins; try again later', { retryAfter: Math.ceil(wait / 1000) });
    }
    const account = await this.o.accounts.byUserName(input.userName);
    const ok = await verifyPassword(input.password, account?.passwordHash ?? (await DUMMY_HASH_PROMISE));
    if (!account || !ok) {
      this.o.accountThrottle.fail(accountKey);
      this.o.addressThrottle.fail(addressKey);
      throw new TabwireError('credentials_invalid');
    }
    if (account.state !== 'active') throw new TabwireError('account_disabled');
    this.o.accountThrottle.succeed(accountKey);
    return this.o.tokens.issue(account, input.seconds);
  }

  /** A new token for the bearer of a valid one. */
  async refresh(claims: AgentClaims, seconds: number): Promise<IssuedToken> {
    return this.o.tokens.issue({ id: claims.accountId, userName: claims.userName }, seconds);
  }

  /** A token for an account by id (session-proxy mode, the CLI); undefined when it is gone or disabled. */
  async tokenFor(accountId: string, seconds: number): Promise<IssuedToken | undefined> {
    const account = await this.o.accounts.byId(accountId);
    if (!account || account.state !== 'active') return undefined;
    return this.o.tokens.issue(account, seconds);
  }
}
