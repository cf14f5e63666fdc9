import type { TabAddress } from '../protocol/address.js';
import type { InboundMessage } from '../protocol/xmpp-message.js';
import type { Selector } from './selector.js';

export { specificity, type Selector } from './selector.js';

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

export type RegisterOutcome = 'registered' | 'removed' | 'tab_owned_by_other_account' | 'too_many_handlers';

/** Whether a tab of a session has a live connection now, on any node (presence). */
export type IsLive = (address: TabAddress) => boolean | Promise<boolean>;

/**
 * The live event-handler registrations (RegisterEventHandler, docs/xmpp.md). Registrations are kept
 * per address (tab and session), at most `handlersPerTab` per address, and live as long as the tab:
 * the hub's release and forget call `forgetTab`. Not durable (docs/xmpp.md).
 * Implementations: memory-handlers.ts (one node), redis-handlers.ts (a cluster: every node sees
 * every registration).
 */
export interface HandlerRegistry {
  /**
   * Adds or replaces the handler for this exact selector on the tab; an empty `fn` removes it. A tab
   * carrying handlers of one account refuses another account's; a tab at its bound refuses a new selector.
   * Atomic per tab: concurrent registrations never exceed the bound.
   */
  register(accountId: string, address: TabAddress, selector: Selector, fn: string): Promise<RegisterOutcome>;
  /**
   * The one registration a message reaches: the most specific selector that has a registration whose
   * tab is live (`isLive`), the newest of those on a tie. A dead tab never shadows a live one; with no
   * live match the message is for PopMessages.
   */
  match(accountId: string, message: InboundMessage, isLive?: IsLive): Promise<HandlerRegistration | undefined>;
  /** The tab is gone (or let go by its session): its registrations go with it. Never rejects. */
  forgetTab(address: TabAddress): Promise<void>;
  /**
   * These tabs are alive: keep their registrations (a shared registry lets those of tabs nobody
   * vouches for expire, so a node that died takes its tabs' handlers with it). Call it from the
   * timer that refreshes live tabs, more often than the registry's TTL. Never rejects.
   */
  touchTabs(addresses: readonly TabAddress[]): Promise<void>;
}
