import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { privateKeyFromPem, signEd25519 } from '../../src/identity/keys.js';
import { signedMessage } from '../../src/quicklogin/challenge.js';
import { get, post, registered } from '../helpers/http.js';
import { makeIdentity, startService, type TestService } from '../helpers/service.js';
import { TestTab } from '../helpers/tab.js';

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The Prometheus text exposition of a service: metric families with their type, and every sample. */
async function scrape(service: TestService): Promise<{ text: string; types: Map<string, string>; samples: Sample[] }> {
  const response = await fetch(`${service.baseUrl}/metrics`);
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  const text = await response.text();
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    const type = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (type) types.set(type[1]!, type[2]!);
    const sample = /^([A-Za-z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!sample) continue;
    const labels: Record<string, string> = {};
    for (const [, key, value] of (sample[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[key!] = value!;
    samples.push({ name: sample[1]!, labels, value: Number(sample[3]) });
  }
  return { text, types, samples };
}

/** The value of the one sample with that name and (at least) those labels; undefined when there is none. */
function value(samples: readonly Sample[], name: string, labels: Record<string, string> = {}): number | undefined {
  const found = samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  expect(found.length).toBeLessThanOrEqual(1);
  return found[0]?.value;
}

let service: TestService;
let other: TestService;
let ada: Awaited<ReturnType<typeof makeIdentity>>;

beforeAll(async () => {
  // Two services in one process, each with its own registry (test files, and the CLI, build several apps).
  service = await startService();
  other = await startService();
  ada = await makeIdentity(service, { FIRST: 'Ada' });
});
afterAll(async () => {
  await service.close();
  await other.close();
});

describe('GET /metrics', () => {
  it('running totals are counters named *_total, and nothing else is', async () => {
    const { types } = await scrape(service);
    const ours = [...types].filter(([name]) => name.startsWith('tabwire_'));
    expect(ours.length).toBeGreaterThan(10);
    for (const [name, type] of ours) expect(name.endsWith('_total'), `${name} (${type})`).toBe(type === 'counter');
    expect(types.get('tabwire_events_delivered_total')).toBe('counter');
    expect(types.get('tabwire_callback_attempts_total')).toBe('counter');
    expect(types.get('tabwire_rate_limited_total')).toBe('counter');
    expect(types.get('tabwire_tabs')).toBe('gauge');
  });

  it('exposes the default process and Node.js metrics, in every app of the process', async () => {
    for (const s of [service, other]) {
      const { types, samples } = await scrape(s);
      expect(types.get('process_cpu_seconds_total')).toBe('counter');
      expect(types.get('process_resident_memory_bytes')).toBe('gauge');
      expect(types.get('nodejs_eventloop_lag_seconds')).toBe('gauge');
      expect(types.get('nodejs_heap_size_used_bytes')).toBe('gauge');
      expect(types.get('nodejs_gc_duration_seconds')).toBe('histogram');
      expect(value(samples, 'process_resident_memory_bytes')).toBeGreaterThan(0);
    }
  });

  it('counts HTTP requests by route pattern, method and status class, never by URL', async () => {
    const code = 'Zq3x9KpLmN0aBcDeFgHiJk';
    expect((await get(service, `/QuickLogin/Sign/${code}`)).status).toBe(404);
    expect((await get(service, '/healthz')).status).toBe(200);
    expect((await get(service, '/no-such-page-7f3a9c')).status).toBe(404);
    const { text, types, samples } = await scrape(service);
    expect(types.get('tabwire_http_request_duration_seconds')).toBe('histogram');
    const count = (labels: Record<string, string>) => value(samples, 'tabwire_http_request_duration_seconds_count', labels);
    expect(count({ route: '/QuickLogin/Sign/:code', method: 'GET', status: '4xx' })).toBe(1);
    expect(count({ route: '/healthz', method: 'GET', status: '2xx' })).toBeGreaterThanOrEqual(1);
    expect(count({ route: 'unmatched', method: 'GET', status: '4xx' })).toBeGreaterThanOrEqual(1);
    // The +Inf bucket holds every observation: the histogram is whole.
    expect(value(samples, 'tabwire_http_request_duration_seconds_bucket', { route: '/QuickLogin/Sign/:code', le: '+Inf' })).toBe(1);
    // Neither the code nor the unknown path became a label value.
    expect(text).not.toContain(code.slice(0, 8));
    expect(text).not.toContain('7f3a9c');
    // The other app in the process counted none of these.
    expect(value((await scrape(other)).samples, 'tabwire_http_request_duration_seconds_count', { route: '/QuickLogin/Sign/:code' })).toBeUndefined();
  });

  it('times a real signature until its result, then its rejection, is in the tab\'s stream', async () => {
    const tab = await TestTab.open(service.wsUrl);
    await registered(service, tab.tabId);
    const key = privateKeyFromPem(ada.privateKeyPem);
    const sign = async (decision: 'approve' | 'reject') => {
      const qr = await post(service, '/QuickLogin', { mode: 'text', purpose: `Metrics ${decision}`, serviceId: '', tab: tab.tabId }, { cookie: tab.cookie });
      expect(qr.status).toBe(200);
      const path = new URL(qr.body.signUrl as string).pathname;
      const info = await get(service, path, { accept: 'application/json' });
      const signature = signEd25519(key, signedMessage(info.body.challenge as string, ada.identity.id, decision));
      expect((await post(service, path, { legalId: ada.identity.id, signature, decision })).status).toBe(200);
    };
    const before = value((await scrape(service)).samples, 'tabwire_signature_delivery_seconds_count', { outcome: 'approved' });
    expect(before).toBeUndefined();

    await sign('approve');
    await tab.next('SignatureReceived');
    let { types, samples } = await scrape(service);
    expect(types.get('tabwire_signature_delivery_seconds')).toBe('histogram');
    expect(value(samples, 'tabwire_signature_delivery_seconds_count', { outcome: 'approved' })).toBe(1);
    expect(value(samples, 'tabwire_signature_delivery_seconds_bucket', { outcome: 'approved', le: '+Inf' })).toBe(1);
    expect(value(samples, 'tabwire_signature_delivery_seconds_sum', { outcome: 'approved' })).toBeGreaterThan(0);

    await sign('reject');
    await tab.next('SignatureRejected');
    ({ samples } = await scrape(service));
    expect(value(samples, 'tabwire_signature_delivery_seconds_count', { outcome: 'rejected' })).toBe(1);
    expect(value(samples, 'tabwire_signature_delivery_seconds_count', { outcome: 'approved' })).toBe(1);
    // A signature refused (the code is used) is no delivery.
    tab.close();
  });

  it('every metric it exposes is documented in docs/metrics.md, and every documented tabwire metric exists', async () => {
    const doc = readFileSync('docs/metrics.md', 'utf8');
    const { types } = await scrape(service);
    for (const name of types.keys()) expect(doc, name).toContain(`\`${name}\``);
    const documented = new Set([...doc.matchAll(/`(tabwire_[a-z_]+)(?:\{[^`]*\})?`/g)].map((m) => m[1]!));
    const histogramParts = /_(bucket|sum|count)$/;
    for (const name of documented) expect(types.has(name) || (histogramParts.test(name) && types.has(name.replace(histogramParts, ''))), name).toBe(true);
  });
});
