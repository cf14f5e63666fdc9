import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registeredRoutes } from '../helpers/openapi-check.js';
import { startService, type TestService } from '../helpers/service.js';

/**
 * HEAD changes nothing (docs/input.md "Safe methods"): every GET route, which Fastify also answers for HEAD,
 * is in the audited table of docs/input.md, so a new GET route fails here until someone has decided what its
 * HEAD may do. The one GET that changes state (a scan-limited code's binding fetch) is tested in
 * test/integration/scan-freshness.test.ts.
 */

let service: TestService;
beforeAll(async () => {
  service = await startService();
});
afterAll(async () => service?.close());

/** The routes named in the first column of the audit table. */
function auditedRoutes(): Set<string> {
  const text = readFileSync(new URL('../../docs/input.md', import.meta.url), 'utf8');
  const section = text.split('## Safe methods')[1]!.split('\n## ')[0]!;
  const routes = new Set<string>();
  for (const line of section.split('\n')) {
    if (!line.startsWith('| `')) continue;
    const firstCell = line.split('|')[1]!;
    for (const match of firstCell.matchAll(/`([^`]+)`/g)) routes.add(match[1]!);
  }
  return routes;
}

describe('HEAD requests', () => {
  it('every GET route is in the audit of docs/input.md, and every audited route exists', async () => {
    const audited = auditedRoutes();
    const gets = registeredRoutes(service.app)
      .filter((r) => r.startsWith('GET '))
      .map((r) => r.slice(4));
    expect(gets.length).toBeGreaterThan(20);
    expect(gets.filter((path) => !audited.has(path))).toEqual([]);
    for (const path of audited) {
      if (gets.includes(path)) continue;
      // Routes the route-table reader cannot name (the root): they answer HEAD all the same.
      const head = await fetch(service.baseUrl + path, { method: 'HEAD' });
      expect(head.status, path).not.toBe(404);
    }
  });

  it('answer without a body, with the status and content type of the GET', async () => {
    for (const path of ['/healthz', '/Events.js', '/.well-known/jwks.json', '/QuickLogin/Qr/AAAAAAAAAAAAAAAAAAAAAA.png']) {
      const [get, head] = await Promise.all([fetch(service.baseUrl + path), fetch(service.baseUrl + path, { method: 'HEAD' })]);
      await get.arrayBuffer();
      expect([head.status, head.headers.get('content-type')], path).toEqual([get.status, get.headers.get('content-type')]);
      expect(await head.text(), path).toBe('');
    }
  });
});
