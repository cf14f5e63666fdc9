/**
 * Readiness of a server this node depends on, by asking it (docs/metrics.md "Health endpoints"): a
 * connection that is open says nothing about a server that stopped answering (a Redis or PostgreSQL
 * stopped with SIGSTOP, a full disk, a network that drops packets), so the probe sends a trivial command
 * and counts the server as up only when it answers within `deadlineMs`. The answer is kept `cacheMs`, so a
 * load balancer's frequent /readyz costs one round trip per server per interval, and concurrent callers
 * share one probe. While a probe's command is still unanswered past its deadline no other is sent: the
 * server counts as down, and a stalled server does not collect one hanging command per interval.
 */
export class TimedProbe {
  private last: { at: number; up: boolean } | undefined;
  private probing: Promise<boolean> | undefined;
  private unanswered = false;

  constructor(
    private readonly deps: {
      /** Resolves when the server answered (PING, SELECT 1); rejects or hangs when it did not. */
      check: () => Promise<unknown>;
      /** Monotonic milliseconds. */
      now: () => number;
    },
    private readonly settings: { deadlineMs: number; cacheMs: number },
  ) {}

  /** Whether the server answered the latest probe in time (probing again when that answer is older than `cacheMs`). */
  up(): Promise<boolean> {
    if (this.last && this.deps.now() - this.last.at < this.settings.cacheMs) return Promise.resolve(this.last.up);
    this.probing ??= this.probe().finally(() => (this.probing = undefined));
    return this.probing;
  }

  private async probe(): Promise<boolean> {
    let up = false;
    if (!this.unanswered) {
      this.unanswered = true;
      const answered = this.deps.check().then(
        () => true,
        () => false,
      );
      void answered.finally(() => (this.unanswered = false));
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), this.settings.deadlineMs);
        timer.unref();
      });
      up = await Promise.race([answered, late]);
      clearTimeout(timer);
    }
    this.last = { at: this.deps.now(), up };
    return up;
  }
}
