import type { TabConnection } from '../hub/connection.js';
import type { EventFrame } from '../protocol/frames.js';

/** What a held poll is finally answered with. */
export type PollAnswer =
  | { kind: 'events'; frames: readonly EventFrame[] }
  /** Nothing happened within the hold time: `[{"type":"NOP"}]` (reference client). */
  | { kind: 'idle' }
  /** A newer poll or a WebSocket of the same tab took over, or the service is stopping. */
  | { kind: 'superseded'; reason: string };

/**
 * One held `POST /ClientEvents` as the hub sees it: it takes the first batch of frames and is
 * done. The transport answers once; every later write returns false so the hub keeps the frames
 * for the tab's next poll.
 */
export class LongPollConnection implements TabConnection {
  readonly transport = 'long-poll';
  private done = false;

  constructor(
    private readonly answer: (answer: PollAnswer) => void,
    /** False once the client has gone (aborted request): frames must not be counted as sent. */
    private readonly writable: () => boolean,
    /** The HTTP connection the poll came on (see TabConnection.client). */
    readonly client?: object,
  ) {}

  /** False once answered, or once the client went away (so a Register finishing after that attaches nothing). */
  get open(): boolean {
    return !this.done && this.writable();
  }

  send(frames: readonly EventFrame[]): boolean {
    if (!this.open) return false;
    this.finish({ kind: 'events', frames });
    return true;
  }

  close(_code: number, reason: string): void {
    this.finish({ kind: 'superseded', reason });
  }

  /** The hold time ran out. */
  idle(): void {
    this.finish({ kind: 'idle' });
  }

  get answered(): boolean {
    return this.done;
  }

  private finish(answer: PollAnswer): void {
    if (this.done) return;
    this.done = true;
    this.answer(answer);
  }
}
