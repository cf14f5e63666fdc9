import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry, type Metric } from 'prom-client';
import type { HubCounters, HubSnapshot } from './hub/hub.js';

/**
 * The process and Node.js metrics (`process_*`, `nodejs_*`, docs/metrics.md), made once per process:
 * they describe the process, not one app in it, and prom-client's collectors cannot be stopped (a GC
 * observer and an event-loop delay monitor each), so making them per app would pile up one set for
 * every app a test process builds. Each app's registry holds the same metric objects.
 */
let processMetrics: Registry | undefined;
function processMetricsRegistry(): Registry {
  if (!processMetrics) {
    processMetrics = new Registry();
    collectDefaultMetrics({ register: processMetrics });
  }
  return processMetrics;
}

/** Upper bounds (seconds) of the HTTP latency buckets: up to a held long-poll (longPollHoldSeconds, at most 60 s). */
const HTTP_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
/** Upper bounds (seconds) of the signature delivery buckets: verification, a store transaction and a publish. */
const DELIVERY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

/**
 * The node's Prometheus metrics (`GET /metrics`, every one documented in docs/metrics.md), in a
 * registry per app, so several apps in one process never clash; the process metrics are shared (above).
 */
export function createMetrics() {
  const registry = new Registry();
  // getMetricsAsArray returns the metric objects themselves (typed as their plain shape).
  for (const metric of processMetricsRegistry().getMetricsAsArray()) registry.registerMetric(metric as unknown as Metric);
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
  const announcements = new Counter({
    name: 'tabwire_event_announcements_total',
    help: 'Event announcements the broker told this node, by whether the node holds the tab (held) or not (not_held: a tab it let go a moment ago)',
    labelNames: ['tab'] as const,
    registers: [registry],
  });
  const heldAnnouncements = announcements.labels({ tab: 'held' });
  const unheldAnnouncements = announcements.labels({ tab: 'not_held' });
  const hubCounters: HubCounters = {
    delivered: () => delivered.inc(),
    dropped: (reason, n) => dropped.inc({ reason }, n),
    fellBack: (n) => fellBack.inc(n),
    announced: (held) => (held ? heldAnnouncements : unheldAnnouncements).inc(),
  };
  return {
    registry,
    hubCounters,
    /** Gauges read from the hub at scrape time. */
    watchHub(snapshot: () => HubSnapshot): void {
      new Gauge({ name: 'tabwire_tabs', help: 'Tabs held by this node', registers: [registry], collect() { this.set(snapshot().tabs); } });
      new Gauge({ name: 'tabwire_tabs_connected', help: 'Tabs with a live connection', registers: [registry], collect() { this.set(snapshot().connected); } });
    },
    qrAnswers: new Counter({
      name: 'tabwire_qr_answers_total',
      help: 'Answers of text and base64 QR requests, by where they were made: ahead on the encoder thread, or on the request',
      labelNames: ['made'] as const,
      registers: [registry],
    }),
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
    // Route pattern, method and status class only, never the URL: the number of series stays bounded (http/http-metrics.ts).
    httpRequests: new Histogram({
      name: 'tabwire_http_request_duration_seconds',
      help: 'Answered HTTP requests by route pattern, method and status class, from arrival to the answer sent (a held long-poll included)',
      labelNames: ['route', 'method', 'status'] as const,
      buckets: HTTP_BUCKETS,
      registers: [registry],
    }),
    signatureDelivery: new Histogram({
      name: 'tabwire_signature_delivery_seconds',
      help: 'From a signature arriving to its result or rejection in the tab\'s event stream, every node told of it (browser-only mode)',
      labelNames: ['outcome'] as const,
      buckets: DELIVERY_BUCKETS,
      registers: [registry],
    }),
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
