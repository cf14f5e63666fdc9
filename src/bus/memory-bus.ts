import type { Bus, BusHandler, BusMessage } from './bus.js';

/**
 * The single-node bus: loops messages back in-process. Handlers run in a microtask, so a publisher
 * never re-enters a subscriber synchronously (the same shape of asynchrony as the Redis bus).
 */
export class MemoryBus implements Bus {
  private readonly handlers = new Set<BusHandler>();

  async publish(message: BusMessage): Promise<void> {
    for (const handler of this.handlers) queueMicrotask(() => handler(message));
  }

  subscribe(handler: BusHandler): () => void {
    this.handlers.add(handler);
    return () => this.handlers.delete(handler);
  }

  async close(): Promise<void> {
    this.handlers.clear();
  }
}
