import { TabwireError } from '../errors.js';
import type { TabAddress } from '../protocol/address.js';
import type { HandlerRegistry } from '../handlers/handlers.js';
import type { Selector } from '../handlers/selector.js';

/** What registering a handler asks of the tabs (hub/registry.ts TabRegistry): whose a tab is, and whether it is live. */
export interface TabOwnership {
  /** The tab's address when `session` is the one it is bound to; throws `tab_session_mismatch` / `tab_not_registered`. */
  requireOwner(tabId: string, session: string, o: { bindIfFree: false }): Promise<TabAddress>;
  /** Whether some node holds the tab of this session (its outage throws `shared_state_unavailable`). */
  holds(address: TabAddress): Promise<boolean>;
}

/** One RegisterEventHandler call, as HTTP parsed it (docs/xmpp.md, docs/agent-api.md). */
export interface HandlerRequest {
  /** The agent account of the bearer token. */
  accountId: string;
  tabId: string;
  /** The hash of the session cookie that came with the call, if one did. */
  session: string | undefined;
  /** Each field absent or "" matches anything. */
  selector: { localName?: string | undefined; namespace?: string | undefined; type?: string | undefined };
  /** The event type the page subscribed to; "" (or absent) removes this exact selector. */
  fn: string | undefined;
}

/**
 * RegisterEventHandler (docs/xmpp.md): routes XMPP messages that match a selector to a live tab of the
 * caller's session as events. Only the page that owns the tab may give it handlers, so the call must carry
 * the tab's session cookie as well as the account's token; the handler belongs to that session's tab, and a
 * session that takes the tab id later inherits none. Resolves once registered (or removed); otherwise
 * throws the refusal from the errors.ts catalogue.
 */
export class RegisterEventHandler {
  constructor(private readonly deps: { handlers: HandlerRegistry; tabs: TabOwnership }) {}

  async run(r: HandlerRequest): Promise<void> {
    // Without the cookie no session can match (a session hash is never empty): the tab's owner is told to send it.
    const address = await this.deps.tabs.requireOwner(r.tabId, r.session ?? '', { bindIfFree: false });
    if (!(await this.deps.tabs.holds(address))) throw new TabwireError('tab_not_registered', `Tab "${r.tabId}" is not live`);
    const selector: Selector = { localName: r.selector.localName || null, namespace: r.selector.namespace || null, type: r.selector.type || null };
    const outcome = await this.deps.handlers.register(r.accountId, address, selector, r.fn ?? '');
    if (outcome === 'tab_owned_by_other_account') throw new TabwireError('tab_owned_by_other_account');
    if (outcome === 'too_many_handlers') throw new TabwireError('handler_limit_reached');
  }
}
