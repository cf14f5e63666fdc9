import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Hub } from './hub/hub.js';

/** The node's Prometheus metrics (`GET /metrics`), in a registry of its own (no global state). */
export function createMetrics(hub: Hub) {
  const registry = new Registry();
  const snapshot = () => hub.snapshot();
  new Gauge({ name: 'tabwire_tabs', help: 'Tabs held by this node', registers: [registry], collect() { this.set(snapshot().tabs); } });
  new Gauge({ name: 'tabwire_tabs_connected', help: 'Tabs with a live connection', registers: [registry], collect() { this.set(snapshot().connected); } });
  new Gauge({ name: 'tabwire_events_delivered', help: 'Events written to tab outboxes', registers: [registry], collect() { this.set(snapshot().delivered); } });
  new Gauge({ name: 'tabwire_events_dropped_unknown_tab', help: 'Events for tabs this node does not hold', registers: [registry], collect() { this.set(snapshot().droppedUnknownTab); } });
  new Gauge({ name: 'tabwire_outbox_overflow', help: 'Events dropped because a tab outbox was full', registers: [registry], collect() { this.set(snapshot().overflowed); } });
  return {
    registry,
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
