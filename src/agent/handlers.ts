import { addressKey, type TabAddress } from '../hub/address.js';
import type { InboundMessage } from './message.js';

/** What a handler listens for; a null field matches anything (SPEC.md "RegisterEventHandler"). */
export interface Selector {
  localName: string | null;
  namespace: string | null;
  type: string | null;
}

export interface HandlerRegistration {
  accountId: string;
  /** The tab and the session that registered the handler: its events reach nobody else. */
  address: TabAddress;
  selector: Selector;
  /** The event type the tab receives (the page's `Events.on(function, ...)`). */
  fn: string;
  /** Registration order; the newest wins a tie. */
  seq: number;
}

/**
 * Specificity, most specific first (ARCHITECTURE.md §4): (localName, namespace, type) >
 * (localName, namespace) > (namespace, type) > (namespace) > (type) > (). As a number: local name
 * 4, namespace 2, type 1, so every listed order holds and the unlisted shapes fall in between.
 */
export const specificity = (s: Selector): number => (s.localName !== null ? 4 : 0) + (s.namespace !== null ? 2 : 0) + (s.type !== null ? 1 : 0);

const keyOf = (s: Selector): string => JSON.stringify([s.localName, s.namespace, s.type]);

/** The selectors a message could match, most specific first: every subset of its three fields. */
function candidateKeys(m: InboundMessage): string[] {
  const ln = m.element?.localName ?? null;
  const ns = m.element?.namespace ?? null;
  const keys: { key: string; score: number }[] = [];
  for (const useLn of [true, false])
    for (const useNs of [true, false])
      for (const useType of [true, false]) {
        if ((useLn && ln === null) || (useNs && ns === null)) continue;
        const selector = { localName: useLn ? ln : null, namespace: useNs ? ns : null, type: useType ? m.type : null };
        keys.push({ key: keyOf(selector), score: specificity(selector) });
      }
  return keys.sort((a, b) => b.score - a.score).map((k) => k.key);
}

export type RegisterOutcome = 'registered' | 'removed' | 'tab_owned_by_other_account' | 'too_many_handlers';

/**
 * Live event-handler registrations of this node, indexed so a match costs at most eight map
 * look-ups (plus the tabs sharing a selector) whatever the number of handlers. Registrations are
 * kept per address (tab and session) and live as long as it: the hub's release and forget call
 * `forgetTab`. Not durable (SPEC.md "Events" rule 1).
 */
export class EventHandlers {
  /** account -> selector key -> registrations (several tabs may share a selector). */
  private readonly byAccount = new Map<string, Map<string, HandlerRegistration[]>>();
  /** address key -> the account whose handlers the tab carries, and how many. */
  private readonly tabOwner = new Map<string, { accountId: string; count: number }>();
  private seq = 0;

  /** `maxPerTab`: handlers one tab may carry (docs/configuration.md `handlersPerTab`). */
  constructor(private readonly maxPerTab = Number.POSITIVE_INFINITY) {}

  /** Adds or replaces the handler for this exact selector on the tab; an empty `fn` removes it. */
  register(accountId: string, address: TabAddress, selector: Selector, fn: string): RegisterOutcome {
    const tabKey = addressKey(address);
    const owner = this.tabOwner.get(tabKey);
    if (owner !== undefined && owner.accountId !== accountId) return 'tab_owned_by_other_account';
    const key = keyOf(selector);
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

  /**
   * The one registration a message reaches: the most specific selector that has a registration whose
   * tab is live (`isLive`), the newest of those on a tie. A dead tab never shadows a live one; with no
   * live match the message is for PopMessages.
   */
  match(accountId: string, message: InboundMessage, isLive: (address: TabAddress) => boolean = () => true): HandlerRegistration | undefined {
    const selectors = this.byAccount.get(accountId);
    if (!selectors) return undefined;
    for (const key of candidateKeys(message)) {
      const registrations = selectors.get(key);
      if (!registrations) continue;
      for (let i = registrations.length - 1; i >= 0; i--) if (isLive(registrations[i]!.address)) return registrations[i];
    }
    return undefined;
  }

  /** The tab is gone (or let go by its session): its registrations go with it. */
  forgetTab(address: TabAddress): void {
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
