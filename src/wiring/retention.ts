import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import type { Config } from '../config/schema.js';
import { tabBindingPurgeTask } from '../hub/binding-refresh.js';
import type { Metrics } from '../metrics.js';
import { Purge } from '../retention/purge.js';
import { retentionWindows, storeRetentionTasks } from '../retention/tasks.js';
import type { Store } from '../store/stores.js';
import { createPurgeRunner } from '../cluster/factories.js';
import type { LeaseFactory } from '../lease/lease.js';
import type { Lifecycle } from './area.js';

export interface RetentionArea extends Lifecycle {
  /** The periodic retention purge; its tasks say what goes and when (docs/configuration.md "Retention"). */
  purge: Purge;
}

export function createRetentionArea(o: { config: Config; store: Store; leases: LeaseFactory; clock: Clock; metrics: Metrics; log: Logger }): RetentionArea {
  const { config, store } = o;
  const purge = new Purge({
    // Each kind of stored data with its retention window; further kinds join this list as PurgeTasks.
    tasks: [...storeRetentionTasks(store, retentionWindows(config)), tabBindingPurgeTask(store.tabs, config.tabBindingRetentionSeconds * 1000)],
    clock: o.clock,
    log: o.log.child({ module: 'retention' }),
    onPurged: (kind, count) => o.metrics.purged.inc({ kind }, count),
  });
  // Once per cluster: the node holding the purge lease runs it (on one node, always this one).
  const runner = createPurgeRunner({ leases: o.leases, purge, intervalMs: config.purgeIntervalSeconds * 1000, log: o.log });
  return { purge, start: () => runner.start(), stop: () => runner.stop() };
}
