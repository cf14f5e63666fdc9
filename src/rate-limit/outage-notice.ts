import type { Logger } from 'pino';

/**
 * One warning when a limit store loses Redis and one line when it has it back, not one per failed command:
 * an outage fails every request's command, and a line each would flood the log.
 */
export interface OutageNotice {
  readonly failing: boolean;
  failed(err: unknown): void;
  recovered(): void;
}

/** `limits` names what falls back to counting on this node, e.g. "request rate limits". */
export function outageNotice(log: Pick<Logger, 'warn' | 'info'>, limits: string): OutageNotice {
  let failing = false;
  return {
    get failing() {
      return failing;
    },
    failed(err) {
      if (failing) return;
      failing = true;
      log.warn({ err }, `Redis unreachable: ${limits} count on this node only`);
    },
    recovered() {
      if (!failing) return;
      failing = false;
      log.info(`Redis back: ${limits} shared again`);
    },
  };
}
