import type { Logger } from 'pino';
import { Listeners } from '../listeners.js';
import type { RedisConnection } from '../redis/connection.js';
import type { Bus, BusHandler, BusMessage } from './bus.js';

/** A node's bus channel is `bus:<node>` (prefixed, docs/redis.md "Keys"): messages addressed to it, and only those. */
export const BUS_CHANNEL_PREFIX = 'bus:';

/** The channel of the messages addressed to `node` (unprefixed). */
export const busChannel = (node: string): string => `${BUS_CHANNEL_PREFIX}${node}`;

/**
 * The cluster bus over Redis pub/sub: each node subscribes to its own channel, and a message is published on
 * the channel of the node it is addressed to, so no other node receives or parses it. Guarantees, as the Bus
 * contract says: at-most-once (pub/sub keeps nothing for a subscriber that is disconnected); a publisher's
 * messages to one node arrive in publish order (one command connection per node, and Redis forwards a
 * connection's PUBLISHes in order); a subscriber that throws affects nobody. After a reconnect the channel is
 * subscribed again (redis/connection.ts). A publish while Redis is down is queued and sent on reconnect, or
 * rejected within the command timeout.
 */
export class RedisBus implements Bus {
  private readonly handlers: Listeners<BusMessage>;
  private unsubscribe: (() => Promise<void>) | undefined;

  private constructor(
    private readonly redis: RedisConnection,
    private readonly log: Pick<Logger, 'error' | 'warn'>,
  ) {
    this.handlers = new Listeners('bus subscriber', log);
  }

  /** Subscribes `node` to its bus channel; resolves once Redis confirmed (or, while Redis is down, at once: see connection.subscribe). */
  static async open(redis: RedisConnection, node: string, log: Pick<Logger, 'error' | 'warn'>): Promise<RedisBus> {
    const bus = new RedisBus(redis, log);
    bus.unsubscribe = await redis.subscribe(busChannel(node), (payload) => bus.receive(payload));
    return bus;
  }

  async publish(to: string, message: BusMessage): Promise<void> {
    await this.redis.client.publish(this.redis.channel(busChannel(to)), JSON.stringify(message));
  }

  subscribe(handler: BusHandler): () => void {
    return this.handlers.add(handler);
  }

  async close(): Promise<void> {
    this.handlers.clear();
    await this.unsubscribe?.();
  }

  private receive(payload: string): void {
    let message: BusMessage;
    try {
      message = JSON.parse(payload) as BusMessage;
    } catch (err) {
      this.log.warn({ err }, 'unreadable bus message dropped');
      return;
    }
    this.handlers.tell(message);
  }
}
