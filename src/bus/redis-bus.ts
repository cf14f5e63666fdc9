import type { Logger } from 'pino';
import { Listeners } from '../listeners.js';
import type { RedisConnection } from '../redis/connection.js';
import type { Bus, BusHandler, BusMessage } from './bus.js';

/** The channel every node publishes to and subscribes to (prefixed, docs/redis.md "Keys"). */
export const BUS_CHANNEL = 'bus';

/**
 * The cluster bus over Redis pub/sub: every message reaches every subscribed node, this one included.
 * Guarantees, as the Bus contract says: at-most-once (pub/sub keeps nothing for a subscriber that is
 * disconnected); a publisher's messages arrive in publish order (one command connection per node, and
 * Redis forwards a connection's PUBLISHes in order); a subscriber that throws affects nobody. After a
 * reconnect the channel is subscribed again (redis/connection.ts). A publish while Redis is down is
 * queued and sent on reconnect, or rejected within the command timeout.
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

  /** Subscribes the node to the bus channel; resolves once Redis confirmed (or, while Redis is down, at once: see connection.subscribe). */
  static async open(redis: RedisConnection, log: Pick<Logger, 'error' | 'warn'>): Promise<RedisBus> {
    const bus = new RedisBus(redis, log);
    bus.unsubscribe = await redis.subscribe(BUS_CHANNEL, (payload) => bus.receive(payload));
    return bus;
  }

  async publish(message: BusMessage): Promise<void> {
    await this.redis.client.publish(this.redis.channel(BUS_CHANNEL), JSON.stringify(message));
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
