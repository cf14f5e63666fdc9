import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import type { Config } from '../config/schema.js';
import { tabBindingPurgeTask } from '../hub/binding-refresh.js';
import { runOncePerCluster, type ClusterJob, type LeaderRunner } from '../lease/leader.js';
import type { LeaseFactory } from '../lease/lease.js';
import type { Metrics } from '../metrics.js';
import { Purge } from '../retention/purge.js';
import { retentionWindows, storeRetentionTasks } from '../retention/tasks.js';
import type { Store } from '../store/stores.js';
import type { Lifecycle } from './area.js';
import { LEASES } from './shared.js';

/** The purge needs no quick fail-over: a missed run is done by the next holder's first interval. */
const PURGE_LEASE_TTL_MS = 30_000;

export interface RetentionArea extends Lifecycle {
  /** The periodic retention purge; its tasks say what goes and when (docs/configuration.md "Retention"). */
  purge: Purge;
}

export interface RetentionAreaDeps {
  store: Store;
  /** Leases of the cluster (the purge runs on one node at a time). */
  leases: LeaseFactory;
  clock: Clock;
  metrics: Metrics;
  log: Logger;
}

export function createRetentionArea(config: Config, { store, leases, clock, metrics, log }: RetentionAreaDeps): RetentionArea {
  const purge = new Purge({
    // Each kind of stored data with its retention window; further kinds join this list as PurgeTasks.
    tasks: [...storeRetentionTasks(store, retentionWindows(config)), tabBindingPurgeTask(store.tabs, config.tabBindingRetentionSeconds * 1000)],
    clock,
    log: log.child({ module: 'retention' }),
    onPurged: (kind, count) => metrics.purged.inc({ kind }, count),
  });
  // Once per cluster: the node holding the purge lease runs it (on one node, always this one).
  const runner = createPurgeRunner({ leases, log }, { purge, intervalMs: config.purgeIntervalSeconds * 1000 });
  return { purge, start: () => runner.start(), stop: () => runner.stop() };
}

/**
 * The retention purge on one node of the cluster (the lease holder) instead of every node; returns
 * the runner to `start()` in place of `purge.start(interval)` and to `stop()` at shutdown.
 */
export function createPurgeRunner(
  { leases, log }: { leases: LeaseFactory; log: Logger },
  { purge, intervalMs }: { purge: { start(intervalMs: number): void; stop(): Promise<void> }; intervalMs: number },
): LeaderRunner {
  const job: ClusterJob = { start: () => purge.start(intervalMs), stop: () => purge.stop() };
  return runOncePerCluster(leases(LEASES.retentionPurge, PURGE_LEASE_TTL_MS), job, log);
}
