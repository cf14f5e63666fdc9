import type { InboundMessage } from './message.js';

/** What a handler listens for; a null field matches anything (SPEC.md "RegisterEventHandler"). */
export interface Selector {
  localName: string | null;
  namespace: string | null;
  type: string | null;
}

export interface HandlerRegistration {
  accountId: string;
  tabId: string;
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

export type RegisterOutcome = 'registered' | 'removed' | 'tab_owned_by_other_account';

/**
 * Live event-handler registrations of this node, indexed so a match costs at most eight map
 * look-ups whatever the number of handlers. Registrations live as long as their tab: the hub's
 * forget calls `forgetTab`. Not durable (SPEC.md "Events" rule 1).
 */
export class EventHandlers {
  /** account -> selector key -> registrations (several tabs may share a selector). */
  private readonly byAccount = new Map<string, Map<string, HandlerRegistration[]>>();
  /** tab -> the account whose handlers it carries. */
  private readonly tabOwner = new Map<string, string>();
  private seq = 0;

  /** Adds or replaces the handler for this exact selector on the tab; an empty `fn` removes it. */
  register(accountId: string, tabId: string, selector: Selector, fn: string): RegisterOutcome {
    const owner = this.tabOwner.get(tabId);
    if (owner !== undefined && owner !== accountId) return 'tab_owned_by_other_account';
    const key = keyOf(selector);
    const selectors = this.byAccount.get(accountId) ?? new Map<string, HandlerRegistration[]>();
    const others = (selectors.get(key) ?? []).filter((r) => r.tabId !== tabId);
    if (fn === '') {
      this.store(accountId, selectors, key, others);
      if (!this.tabHasHandlers(accountId, tabId)) this.tabOwner.delete(tabId);
      return 'removed';
    }
    this.store(accountId, selectors, key, [...others, { accountId, tabId, selector, fn, seq: ++this.seq }]);
    this.tabOwner.set(tabId, accountId);
    return 'registered';
  }

  /** The one registration a message reaches: most specific selector, newest on a tie. */
  match(accountId: string, message: InboundMessage): HandlerRegistration | undefined {
    const selectors = this.byAccount.get(accountId);
    if (!selectors) return undefined;
    for (const key of candidateKeys(message)) {
      const registrations = selectors.get(key);
      if (registrations && registrations.length > 0) return registrations[registrations.length - 1];
    }
    return undefined;
  }

  /** The tab is gone: its registrations go with it. */
  forgetTab(tabId: string): void {
    const accountId = this.tabOwner.get(tabId);
    if (accountId === undefined) return;
    this.tabOwner.delete(tabId);
    const selectors = this.byAccount.get(accountId);
    if (!selectors) return;
    for (const [key, registrations] of selectors) this.store(accountId, selectors, key, registrations.filter((r) => r.tabId !== tabId));
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

  private tabHasHandlers(accountId: string, tabId: string): boolean {
    for (const registrations of this.byAccount.get(accountId)?.values() ?? []) if (registrations.some((r) => r.tabId === tabId)) return true;
    return false;
  }
}
