import type { Logger } from 'pino';

/**
 * The listeners of a publish-subscribe contract (the broker's announcements, the bus's messages). Each is
 * called with what arrived; one that throws is logged and affects neither the caller nor the other listeners.
 */
export class Listeners<T> {
  private readonly set = new Set<(value: T) => void>();

  /** `what` names a listener in the log ("bus subscriber"); without `log` a failure goes to stderr. */
  constructor(
    private readonly what: string,
    private readonly log?: Pick<Logger, 'error'>,
  ) {}

  /** Returns a function that removes the listener. */
  add(listener: (value: T) => void): () => void {
    this.set.add(listener);
    return () => {
      this.set.delete(listener);
    };
  }

  clear(): void {
    this.set.clear();
  }

  /** Calls every listener now (what arrived from the network). */
  tell(value: T): void {
    for (const listener of this.set) this.call(listener, value);
  }

  /**
   * Calls every listener in a microtask of its own: an in-process publisher never re-enters a listener
   * synchronously, the same shape of asynchrony as a networked implementation.
   */
  tellSoon(value: T): void {
    for (const listener of this.set) queueMicrotask(() => this.call(listener, value));
  }

  private call(listener: (value: T) => void, value: T): void {
    try {
      listener(value);
    } catch (err) {
      // An exception thrown in a microtask would be uncaught and end the process: contain it here.
      if (this.log) this.log.error({ err }, `${this.what} failed`);
      else console.error(`${this.what} failed`, err);
    }
  }
}
