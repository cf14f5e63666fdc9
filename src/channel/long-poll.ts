import type { Logger } from 'pino';
import { isOutage, type TabwireError } from '../errors.js';
import type { TabConnection } from '../hub/connection.js';
import type { Hub } from '../hub/hub.js';
import type { TabRegistry } from '../hub/registry.js';
import type { EventFrame } from '../protocol/frames.js';
import { retryThroughOutage } from './outage-wait.js';

/** What a held poll is finally answered with. */
export type PollAnswer =
  | { kind: 'events'; frames: readonly EventFrame[] }
  /** Nothing happened within the hold time: `[{"type":"NOP"}]` (reference client). */
  | { kind: 'idle' }
  /** A newer poll or a WebSocket of the same tab took over, or the service is stopping. */
  | { kind: 'superseded'; reason: string }
  /** The store or Redis stayed unreachable for the whole hold time: 503 with Retry-After (errors.ts `isOutage`). */
  | { kind: 'unavailable'; error: TabwireError };

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

  /** The poll could not be registered within the hold time: the store or Redis is unreachable. */
  unavailable(error: TabwireError): void {
    this.finish({ kind: 'unavailable', error });
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

export interface LongPollChannelOptions {
  registry: TabRegistry;
  hub: Hub;
  log: Logger;
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
 * Serves one long-poll the way `serveWebSocket` serves a socket (docs/events.md "Long-poll"): the poll
 * registers its tab (the first poll of a tab binds it), is held until an event, the hold time, or a
 * reason to give up, and is detached from the hub when answered. Resolves with what to answer.
 */
export async function holdPoll(o: LongPollChannelOptions, poll: Poll): Promise<PollAnswer> {
  const address = { tabId: poll.tabId, session: poll.session };
  const holdEnds = performance.now() + o.holdMs;
  let connection!: LongPollConnection;
  let timer: NodeJS.Timeout | undefined;
  const answer = await new Promise<PollAnswer>((resolve) => {
    connection = new LongPollConnection(resolve, poll.writable, poll.client);
    // The hold time ends the poll once it is registered; until then the registration's own wait decides.
    let registered = false;
    let holdOver = false;
    timer = setTimeout(() => {
      holdOver = true;
      if (registered) connection.idle();
    }, o.holdMs);
    // A response closed before it was answered: the client went away. What reaches the tab now waits in its stream.
    poll.onClientGone(() => connection.close(0, 'client_gone'));
    // Through a store or Redis outage the poll waits (up to its hold time) for the registration to go
    // through, rather than answering an error at once: the reference script alert()s on any non-200
    // answer (docs/events.md "Outages").
    const register = () => o.registry.register(poll.tabId, poll.session, connection, poll.location, poll.lastEventId);
    retryThroughOutage(register, { deadline: holdEnds, wanted: () => connection.open && !o.stopping() }).then(
      (outcome) => {
        if (outcome !== 'ok') return connection.close(0, outcome === 'conflict' ? 'tab_session_mismatch' : 'tab_limit_reached');
        registered = true;
        o.hub.touch(address);
        // A new session's cookie rides on this answer: answer at once (empty) so the page has it for its
        // QR requests now, not after the hold time. The client polls again immediately.
        if (holdOver) connection.idle();
        else if (poll.newSession) connection.send([]);
      },
      (err: unknown) => {
        // Shutdown: answered as every held poll is then (events-routes.ts), not with the outage.
        if (isOutage(err) && o.stopping()) return connection.close(0, 'shutdown');
        if (isOutage(err)) return connection.unavailable(err);
        o.log.error({ err }, 'long-poll registration failed');
        connection.close(0, 'internal_error');
      },
    );
  });
  clearTimeout(timer);
  o.hub.detach(address, connection);
  return answer;
}
