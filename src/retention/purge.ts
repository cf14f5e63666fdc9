import type { Logger } from 'pino';
import type { Clock } from '../clock.js';

/**
 * One kind of stored data with a retention window. `run` deletes the rows that are past their
 * window at `now` and answers how many it deleted. A task must only delete what nothing can still
 * need: it is safe to run at any time, on any node, any number of times.
 */
export interface PurgeTask {
  /** Metric label and log field (`tabwire_purged_total{kind}`). */
  kind: string;
  run(now: number): Promise<number>;
}

/** What the purge calls: its tasks, time, log, and the metrics hook (all of them dependencies). */
export interface PurgeDeps {
  tasks: readonly PurgeTask[];
  clock: Clock;
  log: Logger;
  /** Told how many rows each run of a task deleted (metrics). */
  onPurged?: (kind: string, count: number) => void;
}

/**
 * The periodic retention purge (docs/configuration.md "Retention"): every interval, each task
 * deletes what is past its window. A task that fails is logged and retried at the next run; the
 * others still run. Runs never overlap.
 */
export class Purge {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<Record<string, number>> | undefined;
  private readonly tasks: PurgeTask[];

  constructor(private readonly deps: PurgeDeps) {
    this.tasks = [...deps.tasks];
  }

  /** Adds a kind of data to purge (at the next run). */
  add(task: PurgeTask): void {
    this.tasks.push(task);
  }

  /** Runs every task once now (or joins the run in progress); answers the rows deleted per kind. */
  run(): Promise<Record<string, number>> {
    this.running ??= this.runTasks().finally(() => (this.running = undefined));
    return this.running;
  }

  start(intervalMs: number): void {
    this.timer = setInterval(() => void this.run(), intervalMs);
    this.timer.unref();
  }

  /** Stops the timer and waits for a run in progress. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  private async runTasks(): Promise<Record<string, number>> {
    const now = this.deps.clock.now();
    const deleted: Record<string, number> = {};
    for (const task of this.tasks) {
      try {
        const count = await task.run(now);
        deleted[task.kind] = count;
        this.deps.onPurged?.(task.kind, count);
      } catch (err) {
        this.deps.log.error({ err, kind: task.kind }, 'purge task failed');
      }
    }
    if (Object.values(deleted).some((n) => n > 0)) this.deps.log.info({ deleted }, 'retention purge');
    return deleted;
  }
}
