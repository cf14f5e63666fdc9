/**
 * Waiting for one IPC message from a child process: the start-up handshakes and the numbered
 * requests of child.ts and channel-worker.ts all go through here, each saying only which message
 * it waits for and how it fails.
 */
import type { ChildProcess, Serializable } from 'node:child_process';

/** What a wait makes of one message: settle with a value or an error, or (undefined) keep waiting. */
export type ReplyVerdict<T> = { value: T } | { error: Error } | undefined;

export interface ReplyWait<M, T> {
  /** Sent to the child once the listeners are in place, so its answer cannot come too early. */
  request?: Serializable;
  timeoutMs: number;
  /** The rejection when no message settled the wait within `timeoutMs`. */
  timeoutError(): Error;
  /** The rejection when the child exits first; without it an exit is noticed only by the timeout. */
  exitError?(code: number | null, signal: NodeJS.Signals | null): Error;
  /** Called with each message from the child until one settles the wait. */
  judge(message: M): ReplyVerdict<T>;
}

/** Resolves or rejects as `wait` decides; its timer and listeners are removed once it settles. */
export function awaitReply<M, T>(child: ChildProcess, wait: ReplyWait<M, T>): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const settle = (verdict: NonNullable<ReplyVerdict<T>>): void => {
      clearTimeout(timer);
      child.off('message', onMessage);
      child.off('exit', onExit);
      if ('error' in verdict) reject(verdict.error);
      else resolve(verdict.value);
    };
    const timer = setTimeout(() => settle({ error: wait.timeoutError() }), wait.timeoutMs);
    const onMessage = (m: M): void => {
      const verdict = wait.judge(m);
      if (verdict) settle(verdict);
    };
    const onExit = (code: number | null, signal: NodeJS.Signals | null): void => {
      if (wait.exitError) settle({ error: wait.exitError(code, signal) });
    };
    child.on('message', onMessage);
    if (wait.exitError) child.once('exit', onExit);
    if (wait.request !== undefined) child.send(wait.request);
  });
}
