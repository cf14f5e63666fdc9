import { DEADLINE_MS } from './until.js';
import type { TestService } from './service.js';

export interface Answer {
  status: number;
  contentType: string;
  body: any;
  headers: Headers;
}

/** POSTs JSON (or a raw string) and parses the answer, whatever its status. */
export async function post(service: TestService, path: string, body: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  const response = await fetch(service.baseUrl + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return parse(response);
}

export async function get(service: TestService, path: string, headers: Record<string, string> = {}): Promise<Answer> {
  return parse(await fetch(service.baseUrl + path, { headers }));
}

async function parse(response: Response): Promise<Answer> {
  const contentType = response.headers.get('content-type') ?? '';
  const body = contentType.includes('json') ? await response.json() : Buffer.from(await response.arrayBuffer());
  return { status: response.status, contentType, body, headers: response.headers };
}

/** Waits until the service has bound `tabId` (Register has no answer frame). */
export async function registered(service: TestService, tabId: string, ms = DEADLINE_MS): Promise<void> {
  const deadline = Date.now() + ms;
  while ((await service.store.tabs.sessionOf(tabId)) === undefined) {
    if (Date.now() > deadline) throw new Error(`tab ${tabId} never registered`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * Delivers an event to the tab as bound now (its session looked up in the store), as a result
 * for a code issued to that session would be addressed.
 */
export async function deliverToTab(service: TestService, tabId: string, event: { type: string; data: unknown }): Promise<void> {
  const session = await service.store.tabs.sessionOf(tabId);
  if (session === undefined) throw new Error(`tab ${tabId} is not bound`);
  await service.app.tabwire.hub.deliver({ tabId, session }, event);
}

/** A counter's current value from the service's /metrics registry (0 when it has no such series yet). */
export async function counter(service: TestService, name: string, labels: Record<string, string> = {}): Promise<number> {
  const metric = service.app.tabwire.metrics.registry.getSingleMetric(name);
  if (!metric) throw new Error(`no metric ${name}`);
  const { values } = await metric.get();
  const match = values.find((v) => Object.entries(labels).every(([k, want]) => v.labels[k] === want));
  return match?.value ?? 0;
}
