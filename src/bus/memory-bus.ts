import type { Logger } from 'pino';
import { Listeners } from '../listeners.js';
import type { Bus, BusHandler, BusMessage } from './bus.js';

/**
 * The single-node bus: loops every message back in-process, whatever node it names (there is one). Handlers run in a microtask, so a publisher
 * never re-enters a subscriber synchronously (the same shape of asynchrony as a networked bus).
 */
export class MemoryBus implements Bus {
  private readonly handlers: Listeners<BusMessage>;

  /** `log` receives a subscriber's exception; without one it goes to stderr. Either way the process lives on. */
  constructor(log?: Pick<Logger, 'error'>) {
    this.handlers = new Listeners('bus subscriber', log);
  }

  async publish(_to: string, message: BusMessage): Promise<void> {
    this.handlers.tellSoon(message);
  }

  subscribe(handler: BusHandler): () => void {
    return this.handlers.add(handler);
  }

  async close(): Promise<void> {
    this.handlers.clear();
  }
}
