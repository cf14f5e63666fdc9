import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { HubCounters, HubSnapshot } from './hub/hub.js';

/** The node's Prometheus metrics (`GET /metrics`), in a registry of its own (no global state). */
export function createMetrics() {
  const registry = new Registry();
  const delivered = new Counter({ name: 'tabwire_events_delivered_total', help: 'Events appended to tab streams', registers: [registry] });
  const dropped = new Counter({
    name: 'tabwire_events_dropped_total',
    help: 'Events that left a tab stream without ever being sent and had no fallback, by reason (overflow, expired, unreachable: the broker could not be reached for the whole age bound)',
    labelNames: ['reason'] as const,
    registers: [registry],
  });
  const fellBack = new Counter({
    name: 'tabwire_events_stored_instead_total',
    help: 'XMPP events their tab could not take, stored for PopMessages instead',
    registers: [registry],
  });
  const hubCounters: HubCounters = {
    delivered: () => delivered.inc(),
    dropped: (reason, n) => dropped.inc({ reason }, n),
    fellBack: (n) => fellBack.inc(n),
  };
  return {
    registry,
    hubCounters,
    /** Gauges read from the hub at scrape time. */
    watchHub(snapshot: () => HubSnapshot): void {
      new Gauge({ name: 'tabwire_tabs', help: 'Tabs held by this node', registers: [registry], collect() { this.set(snapshot().tabs); } });
      new Gauge({ name: 'tabwire_tabs_connected', help: 'Tabs with a live connection', registers: [registry], collect() { this.set(snapshot().connected); } });
    },
    callbackAttempts: new Counter({ name: 'tabwire_callback_attempts_total', help: 'Callback delivery attempts', labelNames: ['outcome'] as const, registers: [registry] }),
    callbackDelivered: new Counter({ name: 'tabwire_callback_delivered_total', help: 'Callbacks delivered (first 2xx)', registers: [registry] }),
    callbackFailures: new Counter({ name: 'tabwire_callback_failures_total', help: 'Failed callback attempts by reason', labelNames: ['reason'] as const, registers: [registry] }),
    callbackLatency: new Histogram({
      name: 'tabwire_callback_latency_seconds',
      help: 'Duration of one callback attempt',
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    }),
    // Limits (docs/configuration.md "Limits"): running totals, so Prometheus counters.
    rateLimited: new Counter({ name: 'tabwire_rate_limited_total', help: 'Requests refused with 429 by a rate limit or login throttle', labelNames: ['limit'] as const, registers: [registry] }),
    quotaExceeded: new Counter({ name: 'tabwire_quota_exceeded_total', help: 'Requests refused with 507 because a stored quota is full', labelNames: ['limit'] as const, registers: [registry] }),
    requestTimeouts: new Counter({ name: 'tabwire_request_timeouts_total', help: 'Connections cut because a request did not arrive whole in time (408)', registers: [registry] }),
    purged: new Counter({ name: 'tabwire_purged_total', help: 'Rows deleted by the retention purge', labelNames: ['kind'] as const, registers: [registry] }),
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
