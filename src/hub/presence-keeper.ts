import type { Broker } from '../broker/broker.js';
import type { TabAddress } from '../protocol/address.js';

/** Each held tab is held again within this time by default (well inside the broker's keepAliveMs). */
export const DEFAULT_ROLL_MS = 150_000;
export const DEFAULT_ROLL_EVERY_MS = 1_000;

export interface HeldTab {
  to: TabAddress;
  connectedUntil: number;
}

/** What the keeper calls: the broker, time, and the hub's view of its tabs and hook. */
export interface PresenceKeeperDeps {
  broker: Broker;
  now: () => number;
  /** The node's tabs now, with until when each counts as connected here, made as they are read. */
  held: () => Iterator<HeldTab>;
  /** How many tabs the node holds. */
  count: () => number;
  /** The broker had lost the stream of a held tab (made again now): catch its connections up, derive results again. */
  onLost: (address: TabAddress) => void;
  /**
   * Every tab was held again because the broker may have let them go: meanwhile it announced their events to
   * no node (it announces to the holders it knows), so what depends on announcements reads the streams.
   */
  onReheld?: () => void;
}

/** The node's name and the presence periods. */
export interface PresenceKeeperSettings {
  node: string;
  /** How long the broker counts this node alive after a heartbeat (`beat` runs every third of it). */
  presenceTtlMs: number;
  /** Each held tab is held again within this time (a few at each `roll`), well inside the broker's `keepAliveMs`. */
  rollMs: number;
  /** How often `roll` runs (the slice of tabs per roll follows from it and `rollMs`). */
  rollEveryMs: number;
}

/**
 * Keeps this node's presence in a shared broker (docs/events.md "Event streams"): one heartbeat keeps
 * every tab of the node, so the periodic cost does not grow with the tabs; each tab's own state is held
 * again only once per `rollMs`, spread over time. All tabs are held again at once only when the node
 * may have been let go: its first heartbeat, a heartbeat later than its presence lasts (a paused
 * process), or a broker that lost its state (another generation).
 */
export class PresenceKeeper {
  private generation: string | undefined;
  private lastBeat: number | undefined;
  /** Where the next `roll` goes on (a live iterator of the node's tabs: it sees tabs added meanwhile). */
  private rolling: Iterator<HeldTab> | undefined;
  /**
   * A beat still running (a slow broker) makes the next beat a no-op rather than a pile-up, and so for rolls;
   * each has its own flag: a roll slowed by one stalled shard of a Redis Cluster must not starve the heartbeat,
   * or the other nodes would take this one for dead and stop announcing its tabs' events to it.
   */
  private readonly busy = { beat: false, roll: false };

  constructor(
    private readonly deps: PresenceKeeperDeps,
    private readonly settings: PresenceKeeperSettings,
  ) {}

  /** The heartbeat; holds every tab again when the node may have been let go. */
  async beat(): Promise<void> {
    await this.once('beat', () => this.beatNow());
  }

  /** Holds the next slice of tabs again, so each is held once per `rollMs`. */
  async roll(): Promise<void> {
    await this.once('roll', () => this.rollNow());
  }

  private async once(kind: 'beat' | 'roll', work: () => Promise<void>): Promise<void> {
    if (this.busy[kind]) return;
    this.busy[kind] = true;
    try {
      await work();
    } finally {
      this.busy[kind] = false;
    }
  }

  private async beatNow(): Promise<void> {
    const now = this.deps.now();
    const generation = await this.deps.broker.heartbeat(this.settings.node, now);
    const lapsed = this.lastBeat === undefined || now - this.lastBeat >= this.settings.presenceTtlMs || generation !== this.generation;
    this.generation = generation;
    this.lastBeat = now;
    if (!lapsed) return;
    try {
      await this.hold(this.take(this.deps.held(), Infinity));
    } catch (err) {
      // Not held again, nor read: the next beat counts as lapsed and does both.
      this.lastBeat = undefined;
      throw err;
    }
    this.deps.onReheld?.();
  }

  /** Holds one tab again at once: its stream was found made again, and the hold says whether it was lost. */
  async holdAgain(tab: HeldTab): Promise<void> {
    await this.hold([tab]);
  }

  private async rollNow(): Promise<void> {
    const count = this.deps.count();
    if (count === 0) return;
    const slice = Math.ceil((count * this.settings.rollEveryMs) / this.settings.rollMs);
    this.rolling ??= this.deps.held();
    const next = this.take(this.rolling, slice);
    if (next.length < slice) {
      // The end of the tabs: the next roll starts from the first again.
      this.rolling = this.deps.held();
      next.push(...this.take(this.rolling, slice - next.length));
    }
    await this.hold(next);
  }

  private take(tabs: Iterator<HeldTab>, n: number): HeldTab[] {
    const out: HeldTab[] = [];
    while (out.length < n) {
      const next = tabs.next();
      if (next.done) break;
      out.push(next.value);
    }
    return out;
  }

  private async hold(tabs: HeldTab[]): Promise<void> {
    if (tabs.length === 0) return;
    for (const address of await this.deps.broker.refresh(tabs, this.settings.node, this.deps.now())) this.deps.onLost(address);
  }
}
