import type { TabEvent } from '../protocol/frames.js';
import { addressKey, type TabAddress } from '../protocol/address.js';

interface Held {
  to: TabAddress;
  event: TabEvent;
  /** The event's publish key: every try carries it, so a try that timed out but ran is not run again. */
  key: string;
  /** When it was first refused: it is given up once older than the stream's age bound. */
  since: number;
  /** Told once when a later try puts it in the stream (a result's settlement row is then marked published). */
  onTaken: (() => void) | undefined;
}

/**
 * Events the broker could not take (Redis unreachable or stalled), held in order per tab and offered again until
 * they are taken or older than the stream's age bound (docs/redis.md "Outages"). A tab with events
 * held has its new events queued behind them, so order per tab is kept. Bounded: beyond `limit`
 * events held, the newest is refused at once. A refusal may be a timeout of a publish that Redis still
 * runs later: each event keeps the publish key of its first try, and the broker answers a key it has
 * already appended with that event instead of a copy under a new id (broker.ts `publish`).
 */
export class PublishRetry {
  private readonly held = new Map<string, Held[]>();
  /** The held events by publish key: an event offered again while a copy is held is not held twice. */
  private readonly byKey = new Map<string, Held>();
  private size = 0;
  private running: Promise<void> | undefined;

  constructor(
    private readonly deps: {
      publish: (to: TabAddress, event: TabEvent, key: string) => Promise<void>;
      now: () => number;
      /** Events given up (too old, or beyond the limit): counted as dropped. */
      onGivenUp: (n: number) => void;
    },
    private readonly settings: {
      /** How long a refused event is offered again (the streams' age bound). */
      maxAgeMs: number;
      /** Events held at most (beyond: given up). */
      limit: number;
    },
  ) {}

  /** Whether events for the tab are waiting (a new one must queue behind them). */
  holds(to: TabAddress): boolean {
    return this.held.has(addressKey(to));
  }

  /**
   * Holds an event for another try. An event already held under the same publish key (the result outbox
   * offers an owed result at every sweep while the broker is away) is not held again: every extra copy
   * would be one more try after the first landed, and a try that comes after the stream trimmed the first
   * copy (and its key) appends the event a second time under a new id.
   */
  add(to: TabAddress, event: TabEvent, key: string, onTaken?: () => void): void {
    const already = this.byKey.get(key);
    if (already) {
      if (onTaken) already.onTaken = chain(already.onTaken, onTaken);
      return;
    }
    if (this.size >= this.settings.limit) return this.deps.onGivenUp(1);
    const tab = addressKey(to);
    const list = this.held.get(tab) ?? [];
    const held: Held = { to, event, key, since: this.deps.now(), onTaken };
    list.push(held);
    this.held.set(tab, list);
    this.byKey.set(key, held);
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
        if (this.deps.now() - next.since > this.settings.maxAgeMs) {
          this.drop(list);
          this.deps.onGivenUp(1);
          continue;
        }
        try {
          await this.deps.publish(next.to, next.event, next.key);
        } catch {
          break;
        }
        this.drop(list);
        next.onTaken?.();
      }
      if (list.length === 0) this.held.delete(key);
    }
  }

  private drop(list: Held[]): void {
    const first = list.shift();
    if (first) this.byKey.delete(first.key);
    this.size--;
  }
}

const chain = (first: (() => void) | undefined, then: () => void): (() => void) =>
  first
    ? () => {
        first();
        then();
      }
    : then;
