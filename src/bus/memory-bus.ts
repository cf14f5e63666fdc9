import type { Logger } from 'pino';
import type { Bus, BusHandler, BusMessage } from './bus.js';

/**
 * The single-node bus: loops messages back in-process. Handlers run in a microtask, so a publisher
 * never re-enters a subscriber synchronously (the same shape of asynchrony as a networked bus).
 */
export class MemoryBus implements Bus {
  private readonly handlers = new Set<BusHandler>();

  /** `log` receives a subscriber's exception; without one it goes to stderr. Either way the process lives on. */
  constructor(private readonly log?: Pick<Logger, 'error'>) {}

  async publish(message: BusMessage): Promise<void> {
    for (const handler of this.handlers) queueMicrotask(() => this.dispatch(handler, message));
  }

  subscribe(handler: BusHandler): () => void {
    this.handlers.add(handler);
    return () => this.handlers.delete(handler);
  }

  async close(): Promise<void> {
    this.handlers.clear();
  }

  private dispatch(handler: BusHandler, message: BusMessage): void {
    try {
      handler(message);
    } catch (err) {
      // An exception thrown in a microtask would be uncaught and end the process: contain it here.
      if (this.log) this.log.error({ err }, 'bus subscriber failed');
      else console.error('bus subscriber failed', err);
    }
  }
}
