import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Bus, BusHandler, BusMessage } from './bus.js';

/**
 * The cluster's bus: Redis pub/sub on one channel per deployment (the key prefix). Order is kept per
 * publisher (one connection publishes in order; Redis delivers in order). At most once: a message
 * published while a subscriber is disconnected is not replayed to it — the broker's streams hold
 * what a tab must not miss, and a node catches up from them (docs/redis.md).
 */
export class RedisBus implements Bus {
  private readonly handlers = new Set<BusHandler>();
  private readonly channel: string;
  private readonly ready: Promise<unknown>;

  /** `publisher` sends commands; `subscriber` is a connection of its own (a subscribed connection takes no other commands). */
  constructor(
    private readonly publisher: Redis,
    private readonly subscriber: Redis,
    prefix: string,
    private readonly log: Pick<Logger, 'error'>,
  ) {
    this.channel = `${prefix}bus`;
    // ioredis subscribes again by itself after a reconnect (autoResubscribe).
    this.ready = subscriber.subscribe(this.channel);
    subscriber.on('message', (channel: string, text: string) => {
      if (channel !== this.channel) return;
      let message: BusMessage;
      try {
        message = JSON.parse(text) as BusMessage;
      } catch (err) {
        this.log.error({ err }, 'unreadable bus message');
        return;
      }
      for (const handler of this.handlers) {
        try {
          handler(message);
        } catch (err) {
          this.log.error({ err }, 'bus subscriber failed');
        }
      }
    });
  }

  /** Resolves once the subscription is in place. */
  async started(): Promise<void> {
    await this.ready;
  }

  async publish(message: BusMessage): Promise<void> {
    await this.publisher.publish(this.channel, JSON.stringify(message));
  }

  subscribe(handler: BusHandler): () => void {
    this.handlers.add(handler);
    return () => this.handlers.delete(handler);
  }

  async close(): Promise<void> {
    this.handlers.clear();
    await this.subscriber.unsubscribe(this.channel).catch(() => undefined);
  }
}
