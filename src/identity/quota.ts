import { TabwireError } from '../errors.js';
import type { IdentityState } from '../store/stores.js';

/** What the quota calls: the stored count, and the metrics hook. */
export interface IdentityQuotaDeps {
  /** Identities of an account in the store that count against the limit (see LIVE_STATES). */
  count: (accountId: string) => Promise<number>;
  /** Told of every application refused because the account is full (metrics). */
  onRefused?: () => void;
}

/**
 * The states that hold a slot: an identity an operator rejected or retired (Obsoleted,
 * Compromised) no longer does, so only an operator's decision frees room and storage stays bounded.
 */
export const LIVE_STATES: readonly IdentityState[] = ['Created', 'Approved'];

/**
 * Identities per agent account (docs/agent-api.md "Limits"). An application takes a slot before it
 * is processed (signature check, attachments), counting both stored identities and applications in
 * progress, so concurrent ApplyIds cannot overshoot the limit; the slot is released once the
 * identity is stored (it then counts as stored) or the application failed. Near the limit two
 * concurrent applications may both be refused where one would fit: conservative, never over.
 * In-progress slots are this node's; the stored count is shared.
 */
export class IdentityQuota {
  private readonly inProgress = new Map<string, number>();

  /** `limit`: identities an account may hold (config `identitiesPerAccount`). */
  constructor(
    private readonly deps: IdentityQuotaDeps,
    readonly limit: number,
  ) {}

  /** Runs `apply` holding a slot of the account's quota; 507 `identity_limit_reached` when it is full. */
  async within<T>(accountId: string, apply: () => Promise<T>): Promise<T> {
    this.inProgress.set(accountId, (this.inProgress.get(accountId) ?? 0) + 1);
    try {
      const held = (await this.deps.count(accountId)) + this.inProgress.get(accountId)!;
      if (held > this.limit) {
        this.deps.onRefused?.();
        throw new TabwireError('identity_limit_reached', `An account may hold ${this.limit} identities; rejected, obsoleted and compromised ones do not count`, {
          limit: this.limit,
        });
      }
      return await apply();
    } finally {
      const left = this.inProgress.get(accountId)! - 1;
      if (left === 0) this.inProgress.delete(accountId);
      else this.inProgress.set(accountId, left);
    }
  }
}
