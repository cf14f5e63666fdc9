import type { TabConnection } from '../hub/connection.js';
import type { Disconnect } from '../hub/disconnect.js';
import { knowsTab, TabSession, type TabSessionNode } from '../hub/tab-session.js';
import type { EventFrame } from '../protocol/frames.js';

/** What a held poll is finally answered with. */
export type PollAnswer =
  | { kind: 'events'; frames: readonly EventFrame[] }
  /** Nothing happened within the hold time: `[{"type":"NOP"}]` (reference client). */
  | { kind: 'idle' }
  /** The client went away before the answer: nobody reads it (`[]`). */
  | { kind: 'gone' }
  /** X-Last-Event-ID of a tab the service no longer knows: `404 tab_not_registered`, events may be lost. */
  | { kind: 'forgotten' }
  /** The tab session or the hub ended the poll: its problem, or `200 []` (hub/disconnect.ts). */
  | { kind: 'ended'; disconnect: Disconnect };

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

  close(disconnect: Disconnect): void {
    this.finish({ kind: 'ended', disconnect });
  }

  /** The hold time ran out. */
  idle(): void {
    this.finish({ kind: 'idle' });
  }

  /** The client closed the request before it was answered. */
  gone(): void {
    this.finish({ kind: 'gone' });
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

/** The node a poll's tab session ends in (hub/tab-session.ts), and the poll's timing. */
export interface LongPollChannelOptions extends TabSessionNode {
  holdMs: number;
  /** True once the service is shutting down: a poll still waiting through an outage gives up at once. */
  stopping: () => boolean;
}

/** One `POST /ClientEvents` as the transport sees it, once HTTP has checked its headers and session. */
export interface Poll {
  tabId: string;
  session: string;
  /** The page location (the body): the origin cookie-less QR requests must come from. */
  location: string;
  lastEventId: number | undefined;
  /** The poll created the session: answer at once, so the page has its cookie for QR requests now. */
  newSession: boolean;
  /** The HTTP connection (TabConnection.client). */
  client: object;
  /** False once the client has gone. */
  writable: () => boolean;
  /** Registers what to do when the client goes away before the answer. */
  onClientGone: (listener: () => void) => void;
}

/**
 * A poll with X-Last-Event-ID resumes a tab: undefined when the service knows it, else the answer (the
 * tab was forgotten, or an outage outlasted the hold time). `session` is the caller's, if it has one.
 */
export async function checkResume(o: LongPollChannelOptions, tabId: string, session: string | undefined, writable: () => boolean): Promise<PollAnswer | undefined> {
  // Through an outage this look-up waits like the registration (hub/outage-wait.ts).
  const known = await knowsTab(o, tabId, session, { deadline: performance.now() + o.holdMs, stopping: o.stopping, wanted: writable });
  if (known === true) return undefined;
  return known === false ? { kind: 'forgotten' } : { kind: 'ended', disconnect: known };
}

/**
 * Serves one long-poll the way `serveWebSocket` serves a socket (docs/events.md "Long-poll"): the poll's
 * tab session registers its tab (the first poll of a tab binds it), the poll is held until an event, the
 * hold time, or the Disconnect the session or the hub ends it with, and the session lets go of it once
 * answered. Resolves with what to answer.
 */
export async function holdPoll(o: LongPollChannelOptions, poll: Poll): Promise<PollAnswer> {
  const holdEnds = performance.now() + o.holdMs;
  let tab!: TabSession;
  let timer: NodeJS.Timeout | undefined;
  const answer = await new Promise<PollAnswer>((resolve) => {
    const connection = new LongPollConnection(resolve, poll.writable, poll.client);
    tab = new TabSession(o, connection, poll.session);
    // The hold time ends the poll once it is registered; until then the registration's own wait decides.
    let registered = false;
    let holdOver = false;
    timer = setTimeout(() => {
      holdOver = true;
      if (registered) connection.idle();
    }, o.holdMs);
    // A response closed before it was answered: the client went away. What reaches the tab now waits in its stream.
    poll.onClientGone(() => connection.gone());
    // Through a store or Redis outage the poll waits (up to its hold time) for the registration to go
    // through, rather than answering an error at once: the reference script alert()s on any non-200
    // answer (docs/events.md "Outages").
    void tab.poll(poll, { deadline: holdEnds, stopping: o.stopping }).then((ended) => {
      if (ended) return connection.close(ended);
      registered = true;
      // A new session's cookie rides on this answer: answer at once (empty) so the page has it for its
      // QR requests now, not after the hold time. The client polls again immediately.
      if (holdOver) connection.idle();
      else if (poll.newSession) connection.send([]);
    });
  });
  clearTimeout(timer);
  tab.closed();
  return answer;
}
