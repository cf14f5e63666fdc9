import type { TabAddress } from '../protocol/address.js';
import type { EventFrame, TabEvent } from '../protocol/frames.js';
import type { StoredMessage } from '../store/stores.js';

/**
 * Where an event goes when it cannot reach its tab (no live connection, buffer overflow or age):
 * plain data, so it travels on any bus. Events without one are simply lost after their bounds
 * (docs/events.md "Event streams": browser delivery is not durable).
 */
export type DeliveryFallback = {
  /** An XMPP message routed to a handler: stored for the account's PopMessages instead. */
  kind: 'agent-message';
} & Omit<StoredMessage, 'id'>;

/**
 * The broker owns what a tab's events need beyond one process (docs/events.md "Event streams"): the
 * per-tab event stream and the tab's presence. One node uses the memory broker; a cluster shares the
 * Redis broker, so a client resumes on any node and a long-poll on any node reads the tab's events.
 *
 * Stream: each event gets an offset in its tab's stream; its id is the stream's epoch plus the
 * offset. The epoch is the stream's creation time in ms × 1000, so a stream made again (the broker
 * lost it, or it expired) numbers its events above every id of the one before; a client that resumes
 * after an id the stream cannot serve any more is told (`lost`). Bounded by count (`limit`, oldest
 * dropped) and age (`maxAgeMs`). The stream remembers the newest id written to any connection (the
 * "sent" mark), so a connection that does not say what it saw gets only what nobody got. An event with a
 * fallback (an XMPP message) keeps it after it was written, until `confirm` or `withdraw` settles it: a
 * written one awaiting its confirmation is not pushed out by the count bound (its node settles it within
 * the confirmation deadline), only by the age bound, and then its fallback is handed back.
 *
 * Presence: which nodes hold the tab (registered and not yet forgotten there) and until when it counts
 * as connected on each. A holder counts while its node is alive: a node keeps all its tabs with one
 * heartbeat (every third of `presenceTtlMs`), and a node that died lets its tabs go by itself. A node
 * never removes what another node still serves.
 *
 * All times are the caller's clock (`now`): one node's tests move it, a cluster's clocks are synchronised.
 */
export interface Broker {
  /**
   * Appends an event and announces it to the listeners of the nodes that have the tab connected (`hold`
   * with a connected time ahead; `subscribe`), in one step: a caller never announces an event itself. A node
   * without a connection of the tab hears nothing of it; a node that is about to serve a connection holds the
   * tab connected first and then reads the stream, so each event is in what it reads or announced to it. With a `fallback` (an XMPP message) the event is appended only when
   * some node has the tab connected, checked atomically with the append; otherwise the broker neither
   * appends nor announces it and `frame` is undefined: the caller stores the message. `unsent` holds
   * fallbacks of older events the bounds pushed out before anyone got them.
   *
   * Idempotent per `key` (at most once per stream): when the stream still holds an event published with
   * the same key, nothing is appended and that event's frame (its id) is answered again, marked
   * `duplicate`, and the broker announces it again (its first announcement may be the one that was lost; a
   * writer skips an id it wrote). So a publish whose answer was lost (a timeout while Redis stalled) may be
   * retried, and a settled result may be published again by any node, without a copy under a new id
   * (docs/events.md "Results reach the page once"). Keys are at most 64 characters of `[A-Za-z0-9_-]`;
   * without one nothing is de-duplicated.
   */
  publish(to: TabAddress, event: TabEvent, now: number, fallback?: DeliveryFallback, key?: string): Promise<PublishOutcome>;
  /**
   * Calls `listener` with every event appended to the stream of a tab this node has connected (as its last
   * `hold` said), by any node (its own included), once per publish; a broker of one node (memory) tells it
   * every event. It may also tell events of a tab this node let go a moment ago (the listener checks). Guarantees: at-most-once (a networked broker keeps nothing for a node that was away:
   * `onResume`); one tab's announcements arrive in append order; a listener that throws affects neither
   * the publisher nor the other listeners. Listeners run asynchronously, never inside `publish`. Returns
   * a function that removes the listener.
   */
  subscribe(listener: AnnouncementListener): () => void;
  /**
   * Calls `listener` when this node may have missed announcements (a networked broker subscribed again
   * after losing its connection): what depends on them reads the streams again. The memory broker never
   * misses one. Returns a function that removes the listener.
   */
  onResume(listener: () => void): () => void;
  /** The tab's stream after `afterId` (undefined: after the sent mark), oldest first, within its bounds. */
  read(to: TabAddress, afterId: number | undefined, now: number): Promise<StreamRead>;
  /** Frames up to `id` were written to a connection (the mark only moves forward). */
  markSent(to: TabAddress, id: number): Promise<void>;
  /**
   * The client confirmed that written events reached it (docs/xmpp.md "Delivered means confirmed"): a
   * WebSocket pong after their write (`ids`), or its next poll (`through`: every written event up to that
   * id, the sent mark at most). Those still carrying a fallback lose it: delivered, never stored. An event
   * already withdrawn is not brought back. Returns how many were confirmed now.
   */
  confirm(to: TabAddress, written: { ids: readonly number[] } | { through: number }): Promise<number>;
  /**
   * The connection these events were written to ended (or was declared dead) before confirming them:
   * those still carrying a fallback leave the stream, so no connection is written them again, and their
   * fallbacks are returned to be stored. Atomic with `confirm`: whichever comes first settles an event,
   * the other finds nothing.
   */
  withdraw(to: TabAddress, ids: readonly number[]): Promise<DeliveryFallback[]>;
  /**
   * `node` holds the tab and counts it as connected until `connectedUntil` (a live connection: a time
   * far ahead). A node the broker does not know yet counts as alive for `presenceTtlMs` from here.
   * `created`: the broker had no stream for the tab (new to the service, or its stream was lost) and made one.
   * `remade`: the broker let the stream go (a Redis Cluster's check after a fail-over to a replica,
   * docs/redis.md "Replicas and fail-over"; the memory broker: its process started since the tab was last
   * held) and an append made it again before this hold, so events wait in it: for what follows a loss
   * (results derived again) it counts as `created`.
   */
  hold(to: TabAddress, node: string, connectedUntil: number, now: number): Promise<HoldOutcome>;
  /**
   * `hold` for many tabs at once (the node's rolling re-hold that keeps its tabs' streams within
   * `keepAliveMs`, or all of them after a lapse); returns the tabs whose stream had been lost. Unlike
   * `hold` it never moves a node's connected time back (its times may be read before a `hold` of a new
   * connection lands): only `hold` says a tab is no longer connected there.
   */
  refresh(tabs: readonly { to: TabAddress; connectedUntil: number }[], node: string, now: number): Promise<TabAddress[]>;
  /**
   * `node` is alive for `presenceTtlMs` from `now`, and with it every tab it holds. Returns the broker's
   * generation, which changes when the broker lost its state: the node then holds its tabs again.
   */
  heartbeat(node: string, now: number): Promise<string>;
  /**
   * `node` forgot the tab. `holders`: nodes that still hold it. When none is left, the fallbacks of
   * events nobody got are handed back (`unsent`) to be stored; the rest waits for the session's return.
   */
  drop(to: TabAddress, node: string, now: number): Promise<{ holders: number; unsent: DeliveryFallback[] }>;
  /** Whether any node holds the tab (`connected`: and has it connected now). */
  presence(to: TabAddress, now: number): Promise<{ held: boolean; connected: boolean }>;
  /**
   * Removes what has passed its bounds where nothing expires by itself (the memory broker; Redis keys
   * expire, and Redis streams are trimmed when written or read). Returns what left unsent, as `read` does.
   */
  sweep(now: number): { unsent: DeliveryFallback[]; expired: number };
  /** Removes every listener (and a networked broker's subscription); the connections belong to the caller. */
  close(): Promise<void>;
}

export interface BrokerBounds {
  /** Events kept per stream (config outboxLimit). */
  limit: number;
  /** Age of the oldest event kept (config outboxMaxAgeSeconds). */
  maxAgeMs: number;
  /**
   * How long a node's presence lasts without a refresh; also how long a stream nobody holds or writes
   * to is kept (for a session that comes back). Nodes refresh well within it.
   */
  presenceTtlMs: number;
  /** How long a stream with nobody holding it and nothing new is kept for its session's return. */
  idleStreamMs: number;
  /**
   * How long a held tab's stream and presence are kept without a `hold` of the tab (where state expires
   * by itself: Redis). Nodes re-hold each of their tabs well within it, a few at a time; a node that
   * died leaves its tabs' state behind at most this long. The memory broker keeps what a live node holds.
   * Default: `idleStreamMs + presenceTtlMs`.
   */
  keepAliveMs?: number;
}

export interface PublishOutcome {
  /** The appended event with its id; undefined when a fallback event found no connected node. */
  frame: EventFrame | undefined;
  /** Fallbacks of events the bounds pushed out unsent: store them. */
  unsent: DeliveryFallback[];
  /** Events without a fallback the bounds pushed out unsent (metrics). */
  dropped: { overflow: number; expired: number };
  /** The key was published before: `frame` is that event, nothing was appended (it is told to the listeners again, harmlessly). */
  duplicate?: boolean;
}

/**
 * A publish whose event was appended but could not be announced (on a Redis Cluster the node announces after
 * the append, and the channel's shard was away). The hub offers the event again under its publish key, and the
 * broker's answer to that retry (a duplicate) announces it again. What the append pushed out unsent comes with
 * the error, to be stored: the retry's answer does not repeat it.
 */
export class AnnouncementFailed extends Error {
  constructor(
    readonly outcome: PublishOutcome,
    options: { cause: unknown },
  ) {
    super('the event was appended but could not be announced', options);
    this.name = 'AnnouncementFailed';
  }
}

/** An event appended to a tab's stream, as `subscribe` tells it to the nodes that hold the tab. */
export interface Announcement {
  to: TabAddress;
  /** The event with its id, as a connection is written it. */
  frame: EventFrame;
  /** It carries a fallback (an XMPP message): a write of it awaits the client's confirmation (docs/xmpp.md "Delivered means confirmed"). */
  awaiting: boolean;
}

export type AnnouncementListener = (announcement: Announcement) => void;

/** What a publish key may be: short, and without the ':' that separates an entry's fields in Redis. */
export const PUBLISH_KEY_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

export interface StreamRead {
  /** Frames after the cursor, oldest first. */
  frames: EventFrame[];
  /** The newest id the stream ever gave (the epoch itself when none). */
  last: number;
  /** The stream's epoch (0 when the broker has no stream for the tab). */
  epoch: number;
  /**
   * No stream, because the broker let it go (a Redis Cluster's check after a fail-over to a replica,
   * docs/redis.md "Replicas and fail-over") and nothing made it again yet: events written to it may be gone,
   * and the tab's next hold reports it lost. Absent otherwise.
   */
  letGo?: true;
  /** The cursor was given and events after it are gone (another epoch, or past the bounds): tell the client. */
  lost: boolean;
  /** Fallbacks of events that expired unsent while reading: store them. */
  unsent: DeliveryFallback[];
  /** Events without a fallback that expired unsent while reading (metrics). */
  expired: number;
  /** Ids of `frames` that still carry a fallback: once written they await the client's confirmation. */
  awaiting: readonly number[];
}

/** `StreamRead.awaiting` of a read without such frames (most reads): no array made per read. */
export const NONE_AWAITING: readonly number[] = Object.freeze([]);

/** What a hold found: see `Broker.hold`. */
export interface HoldOutcome {
  created: boolean;
  remade: boolean;
  epoch: number;
}

/** The id of the first event of a stream made at `now` is this plus one (docs/events.md "Event ids"). */
export const epochAt = (now: number): number => now * 1000;

/**
 * Where a client that saw events up to `afterId` resumes in a stream whose kept events start at `first`
 * (undefined: none kept) and whose newest id is `last`: after its id when that is of this epoch, with
 * `lost` when events after it have left the stream; from the start of the stream, with `lost`, when
 * its id is of another epoch (the stream was made again, so what followed its id is gone).
 */
export function resumePoint(afterId: number, epoch: number, first: number | undefined, last: number): { cursor: number; lost: boolean } {
  if (afterId < epoch || afterId > last) return { cursor: epoch, lost: true };
  const lost = first === undefined ? afterId < last : first > afterId + 1;
  return { cursor: afterId, lost };
}
