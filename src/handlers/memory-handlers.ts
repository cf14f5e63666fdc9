import { addressKey, type TabAddress } from '../protocol/address.js';
import type { HandlerRegistration, HandlerRegistry, IsLive, RegisterOutcome } from './handlers.js';
import type { InboundMessage } from '../protocol/xmpp-message.js';
import { candidateKeys, selectorKey, type Selector } from './selector.js';

/**
 * The handler registry of one node (the reference implementation of HandlerRegistry), indexed so a
 * match costs at most eight map look-ups (plus the tabs sharing a selector) whatever the number of
 * handlers.
 */
export class MemoryHandlerRegistry implements HandlerRegistry {
  /** account -> selector key -> registrations (several tabs may share a selector). */
  private readonly byAccount = new Map<string, Map<string, HandlerRegistration[]>>();
  /** address key -> the account whose handlers the tab carries, and how many. */
  private readonly tabOwner = new Map<string, { accountId: string; count: number }>();
  private seq = 0;

  /** `maxPerTab`: handlers one tab may carry (docs/configuration.md `handlersPerTab`). */
  constructor(private readonly maxPerTab = Number.POSITIVE_INFINITY) {}

  async register(accountId: string, address: TabAddress, selector: Selector, fn: string): Promise<RegisterOutcome> {
    const tabKey = addressKey(address);
    const owner = this.tabOwner.get(tabKey);
    if (owner !== undefined && owner.accountId !== accountId) return 'tab_owned_by_other_account';
    const key = selectorKey(selector);
    const selectors = this.byAccount.get(accountId) ?? new Map<string, HandlerRegistration[]>();
    const existing = selectors.get(key) ?? [];
    const others = existing.filter((r) => addressKey(r.address) !== tabKey);
    const replaced = others.length !== existing.length;
    const count = (owner?.count ?? 0) - (replaced ? 1 : 0);
    if (fn === '') {
      this.store(accountId, selectors, key, others);
      if (count > 0) this.tabOwner.set(tabKey, { accountId, count });
      else this.tabOwner.delete(tabKey);
      return 'removed';
    }
    if (count >= this.maxPerTab) return 'too_many_handlers';
    this.store(accountId, selectors, key, [...others, { accountId, address, selector, fn, seq: ++this.seq }]);
    this.tabOwner.set(tabKey, { accountId, count: count + 1 });
    return 'registered';
  }

  async match(accountId: string, message: InboundMessage, isLive: IsLive = () => true): Promise<HandlerRegistration | undefined> {
    const selectors = this.byAccount.get(accountId);
    if (!selectors) return undefined;
    for (const key of candidateKeys(message)) {
      const registrations = selectors.get(key);
      if (!registrations) continue;
      for (let i = registrations.length - 1; i >= 0; i--) if (await isLive(registrations[i]!.address)) return registrations[i];
    }
    return undefined;
  }

  async forgetTab(address: TabAddress): Promise<void> {
    const tabKey = addressKey(address);
    const owner = this.tabOwner.get(tabKey);
    if (owner === undefined) return;
    this.tabOwner.delete(tabKey);
    const selectors = this.byAccount.get(owner.accountId);
    if (!selectors) return;
    for (const [key, registrations] of selectors) {
      this.store(owner.accountId, selectors, key, registrations.filter((r) => addressKey(r.address) !== tabKey));
    }
  }

  /** Nothing expires here: a registration goes only with `forgetTab` (one node knows when its tabs go). */
  async touchTabs(): Promise<void> {}

  /** Registrations held (metrics, tests). */
  get size(): number {
    let n = 0;
    for (const selectors of this.byAccount.values()) for (const r of selectors.values()) n += r.length;
    return n;
  }

  private store(accountId: string, selectors: Map<string, HandlerRegistration[]>, key: string, registrations: HandlerRegistration[]): void {
    if (registrations.length > 0) selectors.set(key, registrations);
    else selectors.delete(key);
    if (selectors.size > 0) this.byAccount.set(accountId, selectors);
    else this.byAccount.delete(accountId);
  }
}
