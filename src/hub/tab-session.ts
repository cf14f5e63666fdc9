import type { Logger } from 'pino';
import { isOutage } from '../errors.js';
import type { TabAddress } from '../protocol/address.js';
import type { TabConnection } from './connection.js';
import { disconnects, type Disconnect } from './disconnect.js';
import type { Hub } from './hub.js';
import { retryThroughOutage } from './outage-wait.js';
import type { TabRegistry } from './registry.js';

/** What a tab session needs of its node: the bindings (registry), the live tabs (hub), and a logger for faults. */
export interface TabSessionNode {
  registry: TabRegistry;
  hub: Hub;
  log: Logger;
}

/** How long a registration waits through an outage of the store or Redis (docs/events.md "Outages"). */
export interface OutageBudget {
  /** Give up at this time (`performance.now()` scale). */
  deadline: number;
  /** True once the service is stopping: a wait still going on gives up, and the connection ends as at shutdown. */
  stopping?: () => boolean;
}

/** A Register frame, or what a long-poll carries instead (X-TabID, the body, X-Last-Event-ID). */
export interface Registration {
  tabId: string;
  /** The page location: the origin cookie-less QR requests must come from. */
  location: string;
  /** The last event id the client saw: it resumes after it. */
  lastEventId?: number | undefined;
}

/**
 * The one object every transport ends in (as centrifuge's `NewClient(ctx, node, transport)`): a connection
 * of a session, and the tab it registers. It alone drives the registry and the hub for a transport, and it
 * alone turns what happens into a Disconnect (disconnect.ts), which the transport then only writes: a close
 * frame, or an HTTP answer. Its operations never reject.
 */
export class TabSession {
  /** The tab registered (or being registered: a connection that ends meanwhile must still be detached). */
  private address: TabAddress | undefined;

  constructor(
    private readonly node: TabSessionNode,
    private readonly connection: TabConnection,
    private readonly session: string,
  ) {}

  /**
   * Binds the tab to the session (the first time) and attaches the connection to the hub, which writes what
   * the tab missed. Held through a short outage until `budget.deadline` (the socket stays open, the poll
   * waits: the reference scripts handle an error badly). Resolves with undefined once registered, or with
   * the Disconnect that ends the connection: another session's tab, the session's tab limit, a second tab
   * on one connection, an outage that outlasted the wait, a fault.
   */
  async register(r: Registration, budget: OutageBudget): Promise<Disconnect | undefined> {
    if (this.address !== undefined && this.address.tabId !== r.tabId) return disconnects.frameInvalid('tab_already_registered');
    const { registry, hub } = this.node;
    // Known before the store is asked: a connection that closes meanwhile is detached from what was attached.
    const address = (this.address = { tabId: r.tabId, session: this.session });
    const register = () => registry.register(r.tabId, this.session, this.connection, r.location, r.lastEventId);
    const wanted = () => this.connection.open && !budget.stopping?.();
    let outcome;
    try {
      outcome = await retryThroughOutage(register, { deadline: budget.deadline, wanted });
    } catch (err) {
      return endingOf(err, budget.stopping, this.node.log);
    }
    if (outcome !== 'ok') {
      // Refused: nothing was attached, and the tab is not this connection's.
      this.address = undefined;
      return outcome === 'conflict' ? disconnects.tabSessionMismatch(r.tabId) : disconnects.tabLimitReached(registry.tabLimitRetryAfter);
    }
    // The connection may have closed while the Register was in the store: the hub must not keep it.
    if (!this.connection.open) hub.detach(address, this.connection);
    return undefined;
  }

  /**
   * A long-poll: registers its tab like a Register (the first poll binds it; a repeat poll of a tab this node
   * holds asks the store nothing, TabRegistry.register) and marks the tab alive.
   */
  async poll(r: Registration, budget: OutageBudget): Promise<Disconnect | undefined> {
    const refused = await this.register(r, budget);
    if (refused === undefined) this.node.hub.touch({ tabId: r.tabId, session: this.session });
    return refused;
  }

  /** A Ping: the tab is alive, and the page that sent it stayed after its greeting (reload-resume.ts). */
  ping(): void {
    if (this.address !== undefined) this.node.hub.touch(this.address, this.connection);
  }

  /**
   * Unregister: the tab id is free again once this resolves (the binding is removed before the connection's
   * next frame is handled). Resolves with a Disconnect only when that could not be done (an outage, a fault).
   */
  async unregister(): Promise<Disconnect | undefined> {
    if (this.address === undefined) return undefined;
    try {
      await this.node.registry.unregister(this.address, this.connection);
    } catch (err) {
      return endingOf(err, undefined, this.node.log);
    }
    this.address = undefined;
    return undefined;
  }

  /** The connection ended (socket closed, poll answered): the hub lets go of it; the tab stays for `tabIdleSeconds`. */
  closed(): void {
    if (this.address !== undefined) this.node.hub.detach(this.address, this.connection);
  }
}

/**
 * Whether a poll resuming after an event id (X-Last-Event-ID) may: false when the service no longer knows the
 * tab, so events may have been lost and the client should register it again. A tab this node holds for
 * `session` is known without asking the store. Waits through an outage like a registration; a Disconnect
 * when that wait ended it.
 */
export async function knowsTab(node: TabSessionNode, tabId: string, session: string | undefined, budget: OutageBudget & { wanted: () => boolean }): Promise<boolean | Disconnect> {
  try {
    return await retryThroughOutage(() => node.registry.isBound(tabId, session), { deadline: budget.deadline, wanted: () => budget.wanted() && !budget.stopping?.() });
  } catch (err) {
    return endingOf(err, budget.stopping, node.log);
  }
}

/** An error became an ending: an outage is "try again later", unless the service is stopping; anything else is a fault. */
function endingOf(err: unknown, stopping: (() => boolean) | undefined, log: Logger): Disconnect {
  // Stopping: ended as every connection is then (a poll: `200 []`, its HTTP connection closed), not with the outage.
  if (isOutage(err)) return stopping?.() ? disconnects.shutdown : disconnects.unavailable(err);
  log.error({ err }, 'tab session failed');
  return disconnects.internalError();
}
