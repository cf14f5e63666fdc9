import type { TabEvent } from '../protocol/frames.js';
import { addressKey, type TabAddress } from './address.js';

interface Held {
  to: TabAddress;
  event: TabEvent;
  /** When it was first refused: it is given up once older than the stream's age bound. */
  since: number;
}

/**
 * Events the broker could not take (Redis unreachable), held in order per tab and offered again until
 * they are taken or older than the stream's age bound (docs/redis.md "Outages"). A tab with events
 * held has its new events queued behind them, so order per tab is kept. Bounded: beyond `limit`
 * events held, the newest is refused at once.
 */
export class PublishRetry {
  private readonly held = new Map<string, Held[]>();
  private size = 0;
  private running: Promise<void> | undefined;

  constructor(
    private readonly o: {
      publish: (to: TabAddress, event: TabEvent) => Promise<void>;
      now: () => number;
      maxAgeMs: number;
      limit: number;
      /** Events given up (too old, or beyond the limit): counted as dropped. */
      onGivenUp: (n: number) => void;
    },
  ) {}

  /** Whether events for the tab are waiting (a new one must queue behind them). */
  holds(to: TabAddress): boolean {
    return this.held.has(addressKey(to));
  }

  /** Holds an event for another try. */
  add(to: TabAddress, event: TabEvent): void {
    if (this.size >= this.o.limit) return this.o.onGivenUp(1);
    const key = addressKey(to);
    const list = this.held.get(key) ?? [];
    list.push({ to, event, since: this.o.now() });
    this.held.set(key, list);
    this.size++;
  }

  get pending(): number {
    return this.size;
  }

  /** Offers every held event again, oldest first per tab; stops at a tab's first refusal. Runs never overlap. */
  retry(): Promise<void> {
    this.running ??= this.pass().finally(() => (this.running = undefined));
    return this.running;
  }

  private async pass(): Promise<void> {
    for (const [key, list] of [...this.held]) {
      while (list.length > 0) {
        const next = list[0]!;
        if (this.o.now() - next.since > this.o.maxAgeMs) {
          list.shift();
          this.size--;
          this.o.onGivenUp(1);
          continue;
        }
        try {
          await this.o.publish(next.to, next.event);
        } catch {
          break;
        }
        list.shift();
        this.size--;
      }
      if (list.length === 0) this.held.delete(key);
    }
  }
}
