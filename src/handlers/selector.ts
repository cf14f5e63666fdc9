import type { InboundMessage } from '../protocol/xmpp-message.js';

/** What a handler listens for; a null field matches anything (docs/xmpp.md). */
export interface Selector {
  localName: string | null;
  namespace: string | null;
  type: string | null;
}

/**
 * Specificity, most specific first (docs/agent-api.md): (localName, namespace, type) >
 * (localName, namespace) > (namespace, type) > (namespace) > (type) > (). As a number: local name
 * 4, namespace 2, type 1, so every listed order holds and the unlisted shapes fall in between.
 */
export const specificity = (s: Selector): number => (s.localName !== null ? 4 : 0) + (s.namespace !== null ? 2 : 0) + (s.type !== null ? 1 : 0);

/** A selector as a string key (map key, Redis hash field); equal selectors give equal keys. */
export const selectorKey = (s: Selector): string => JSON.stringify([s.localName, s.namespace, s.type]);

/** The selectors a message could match, most specific first: every subset of its three fields (at most eight). */
export function candidateKeys(m: InboundMessage): string[] {
  const ln = m.element?.localName ?? null;
  const ns = m.element?.namespace ?? null;
  const keys: { key: string; score: number }[] = [];
  for (const useLn of [true, false])
    for (const useNs of [true, false])
      for (const useType of [true, false]) {
        if ((useLn && ln === null) || (useNs && ns === null)) continue;
        const selector = { localName: useLn ? ln : null, namespace: useNs ? ns : null, type: useType ? m.type : null };
        keys.push({ key: selectorKey(selector), score: specificity(selector) });
      }
  return keys.sort((a, b) => b.score - a.score).map((k) => k.key);
}
