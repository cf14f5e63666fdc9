import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import type { Delivery } from '../hub/delivery.js';
import type { Account, AccountStore, MessageStore } from '../store/stores.js';
import type { HandlerRegistration, HandlerRegistry, IsLive } from '../handlers/handlers.js';
import type { InboundMessage } from '../protocol/xmpp-message.js';

const ACCOUNT_CACHE_MS = 2_000;
const ACCOUNT_CACHE_SIZE = 10_000;

export type RouteOutcome = 'delivered' | 'stored' | 'unknown_recipient' | 'quota_full';

/** `data` of the event a handler's tab receives (docs/agent-api.md). */
export interface RoutedMessageData {
  from: string;
  to: string;
  id: string | undefined;
  type: string;
  element: InboundMessage['element'] | null;
  xml: string;
}

/** Splits a JID into local part and domain (resource dropped); lower-cased as nodeprep would. */
export function splitJid(jid: string): { local: string; domain: string } | undefined {
  const bare = jid.split('/')[0] ?? '';
  const at = bare.indexOf('@');
  if (at <= 0 || at === bare.length - 1) return undefined;
  return { local: bare.slice(0, at).toLowerCase(), domain: bare.slice(at + 1).toLowerCase() };
}

/** What the router calls: accounts, handlers, the tabs' delivery and liveness, the message store, time, log. */
export interface MessageRouterDeps {
  accounts: AccountStore;
  handlers: HandlerRegistry;
  delivery: Delivery;
  /** Whether a tab of a session has a live connection now, on any node (the hub, or presence in a cluster). */
  isConnected: IsLive;
  messages: MessageStore;
  clock: Clock;
  log: Logger;
}

/** The agents' XMPP domain and each account's message bound (from the configuration). */
export interface MessageRouterSettings {
  componentDomain: string;
  /** Messages an account may hold before new ones are refused. */
  quota: number;
}

/**
 * Routes a message addressed to an agent account (`user@<component domain>`): to the one live
 * handler it matches, as an event for that tab, and then it is not stored; otherwise into the
 * account's durable messages (PopMessages). No XMPP library in here: the transport parses stanzas.
 */
export class MessageRouter {
  /**
   * Recent account look-ups by user name: a burst of messages to one agent costs one SQLite query,
   * not one per message (it was the largest part of a route, docs/benchmarks.md#agent-routing). Entries live
   * ACCOUNT_CACHE_MS, so a deleted or disabled account stops receiving within that time.
   */
  private readonly accountCache = new Map<string, { account: Account | undefined; at: number }>();

  constructor(
    private readonly deps: MessageRouterDeps,
    private readonly settings: MessageRouterSettings,
  ) {}

  async route(message: InboundMessage): Promise<RouteOutcome> {
    const to = splitJid(message.to);
    if (!to || to.domain !== this.settings.componentDomain.toLowerCase()) return 'unknown_recipient';
    const account = await this.accountByUserName(to.local);
    if (!account || account.state !== 'active') return 'unknown_recipient';

    const handler = await this.matchHandler(account.id, message);
    const stored = { accountId: account.id, from: message.from, to: message.to, type: message.type, content: message.xml, createdAt: this.deps.clock.now() };
    // Delivered only to a live tab of the session that registered the handler; otherwise stored.
    if (handler) {
      const data: RoutedMessageData = {
        from: message.from,
        to: message.to,
        id: message.id,
        type: message.type,
        element: message.element ?? null,
        xml: message.xml,
      };
      // If the tab cannot take it after all (it died meanwhile, overflow, age, or it never confirms the write:
      // docs/xmpp.md "Delivered means confirmed"), the hub hands it back for storing.
      await this.deps.delivery.deliver(handler.address, { type: handler.fn, data }, { kind: 'agent-message', ...stored });
      return 'delivered';
    }
    const appended = await this.deps.messages.append(stored, this.settings.quota);
    if (!appended) this.deps.log.warn({ account: account.userName }, 'message refused: the account\'s message store is full');
    return appended ? 'stored' : 'quota_full';
  }

  /** A registry that cannot answer (Redis down) costs the push, not the message: it is stored instead. */
  private async matchHandler(accountId: string, message: InboundMessage): Promise<HandlerRegistration | undefined> {
    try {
      return await this.deps.handlers.match(accountId, message, this.deps.isConnected);
    } catch (err) {
      this.deps.log.warn({ err, accountId }, 'handler look-up failed; storing the message for PopMessages');
      return undefined;
    }
  }

  private async accountByUserName(userName: string): Promise<Account | undefined> {
    const now = this.deps.clock.now();
    const cached = this.accountCache.get(userName);
    if (cached && now - cached.at < ACCOUNT_CACHE_MS) return cached.account;
    const account = await this.deps.accounts.byUserName(userName);
    if (this.accountCache.size >= ACCOUNT_CACHE_SIZE) this.accountCache.clear();
    this.accountCache.set(userName, { account, at: now });
    return account;
  }
}
