import { EventTypes } from '../protocol/events.js';
import type { Logger } from './platform.js';

/** One event as the page's handler sees it. `id` is the tab's event id when the server sent one. */
export interface ReceivedEvent {
  readonly type: string;
  readonly data: unknown;
  readonly id: number | undefined;
}

/** A page's handler: called with the event's data, and the whole event for its type and id. */
export type EventHandler = (data: unknown, event: ReceivedEvent) => void;

/** Counters a page or a test can read to see what happened to the frames. */
export interface DispatchStats {
  /** Every frame that arrived, whatever became of it. */
  received: number;
  /** Frames handed to at least one page handler (once per frame, not per handler). */
  dispatched: number;
  /** Frames dropped because their id was not newer than the last one seen. */
  duplicates: number;
  /** Frames dropped because they were not JSON, not an object, or had no string type or a bad id. */
  malformed: number;
}

const hasOwn = (value: object, key: string): boolean => Object.prototype.hasOwnProperty.call(value, key);

/**
 * Validates one decoded frame: an object with a non-empty string `type` and, when present, a
 * non-negative integer `id` (docs/events.md "Frames out"). Own properties only, so a polluted
 * Object.prototype cannot supply a type or an id. Returns undefined for anything else.
 */
export function parseEventFrame(value: unknown): ReceivedEvent | undefined {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
  const frame = value as Record<string, unknown>;
  const type = hasOwn(frame, 'type') ? frame.type : undefined;
  if (typeof type !== 'string' || type === '') return undefined;
  const id = hasOwn(frame, 'id') ? frame.id : undefined;
  if (id !== undefined && !(typeof id === 'number' && Number.isSafeInteger(id) && id >= 0)) return undefined;
  return Object.freeze({ type, data: hasOwn(frame, 'data') ? frame.data : undefined, id });
}

/**
 * Routes frames to the handlers a page subscribed with `on`, and to nothing else (docs/events-js.md
 * "Behaviour"): names live in a Map, so no frame type can reach a global, a prototype
 * member, or code; nothing from the wire is evaluated. Frames are de-duplicated by id.
 */
export class Dispatcher {
  private readonly handlers = new Map<string, Set<EventHandler>>();
  private last: number | undefined;
  // Set when a new connection starts; see beginConnection.
  private checkRenumbering = false;
  private readonly counters: DispatchStats = { received: 0, dispatched: 0, duplicates: 0, malformed: 0 };

  constructor(private readonly log: Logger) {}

  /** Subscribes `handler` to events of `type`; returns a function that unsubscribes it. */
  on(type: string, handler: EventHandler): () => void {
    if (typeof type !== 'string' || type === '') throw new TypeError('Events.on: type must be a non-empty string');
    if (typeof handler !== 'function') throw new TypeError('Events.on: handler must be a function');
    let set = this.handlers.get(type);
    if (!set) this.handlers.set(type, (set = new Set()));
    set.add(handler);
    return () => this.off(type, handler);
  }

  /** Unsubscribes `handler` from `type`; unknown pairs are ignored. */
  off(type: string, handler: EventHandler): void {
    const set = this.handlers.get(type);
    if (!set) return;
    set.delete(handler);
    if (set.size === 0) this.handlers.delete(type);
  }

  /** The newest event id seen from the service's current numbering of this tab. */
  get lastEventId(): number | undefined {
    return this.last;
  }

  /** Forget the last id: the service forgot the tab, or the tab or server changed, so ids start over. */
  resetEventIds(): void {
    this.last = undefined;
    this.checkRenumbering = false;
  }

  /**
   * A new WebSocket connection starts. The service resends only ids above the lastEventId sent in
   * Register, so a first frame at or below it means the tab is numbered anew, and the WebSocket
   * has no 404 to say so. tabwire starts a re-registered tab's ids above its old ones (ms × 1000,
   * docs/events.md "Event ids"), but a node whose clock is behind (cluster, restart after a clock
   * step) or a server numbering from 1 would otherwise have every later event dropped as a
   * duplicate until the page reloads.
   */
  beginConnection(): void {
    this.checkRenumbering = true;
  }

  /** One WebSocket text frame. Binary frames and non-JSON text are malformed. */
  receiveText(text: unknown): void {
    if (typeof text !== 'string') return this.dropMalformed();
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      return this.dropMalformed();
    }
    this.receive(value);
  }

  /** One long-poll answer: a JSON array of frames. Returns false when the body is not one. */
  receiveBatch(text: string): boolean {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      value = undefined;
    }
    if (!Array.isArray(value)) {
      this.dropMalformed();
      return false;
    }
    for (const item of value as unknown[]) this.receive(item);
    return true;
  }

  /** One decoded frame. */
  receive(value: unknown): void {
    const event = parseEventFrame(value);
    if (!event) return this.dropMalformed();
    this.counters.received++;
    if (event.id !== undefined && this.isDuplicate(event.id)) {
      this.counters.duplicates++;
      return;
    }
    if (event.type === EventTypes.NOP) return;
    const set = this.handlers.get(event.type);
    if (!set || set.size === 0) return;
    this.counters.dispatched++;
    // A copy, so a handler that subscribes or unsubscribes does not change this dispatch.
    for (const handler of Array.from(set)) {
      try {
        handler.call(undefined, event.data, event);
      } catch (err) {
        // One failing handler must not stop the others, nor the channel.
        this.log.error(`tabwire Events: a handler for "${event.type}" threw`, err);
      }
    }
  }

  /** A snapshot of the counters. */
  get stats(): DispatchStats {
    return { ...this.counters };
  }

  private isDuplicate(id: number): boolean {
    if (this.checkRenumbering) {
      this.checkRenumbering = false;
      if (this.last !== undefined && id <= this.last) this.last = undefined;
    }
    if (this.last !== undefined && id <= this.last) return true;
    this.last = id;
    return false;
  }

  private dropMalformed(): void {
    this.counters.received++;
    this.counters.malformed++;
  }
}
