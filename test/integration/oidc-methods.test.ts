import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addClient } from '../helpers/oidc-flow.js';
import { startService, type TestService } from '../helpers/service.js';

// The authorization and logout endpoints take GET only (docs/oidc.md "Endpoints"): the library serves their
// POST forms only with SameSite=None cookies. A POST is the service's own 404 problem+json, never the
// library's bare text 404 (found by the HTTP fuzzer).

let service: TestService;

beforeAll(async () => {
  service = await startService({ logLevel: 'error' });
});
afterAll(async () => {
  await service?.close();
});

describe('OpenID Provider endpoint methods', () => {
  it('POST /oidc/auth and POST /oidc/session/end answer 404 problem+json; their GET forms still work', async () => {
    const client = await addClient(service.store, { redirectUris: ['https://shop.example/cb'] });
    const params = new URLSearchParams({ client_id: client.clientId, response_type: 'code', scope: 'openid', redirect_uri: 'https://shop.example/cb', state: 's', nonce: 'n' });
    for (const path of ['/oidc/auth', '/oidc/session/end']) {
      const posted = await fetch(`${service.baseUrl}${path}`, { method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: params });
      expect([posted.status, posted.headers.get('content-type')]).toEqual([404, 'application/problem+json; charset=utf-8']);
      expect(await posted.json()).toMatchObject({ status: 404, code: 'not_found' });
    }
    const started = await fetch(`${service.baseUrl}/oidc/auth?${params}`, { redirect: 'manual' });
    expect(started.status).toBe(303);
    expect(started.headers.get('location')).toMatch(/^\/oidc\/interaction\/[A-Za-z0-9_-]+$/);
    const logout = await fetch(`${service.baseUrl}/oidc/session/end?client_id=${encodeURIComponent(client.clientId)}`, { redirect: 'manual' });
    expect(logout.status).toBe(200);
    expect(logout.headers.get('content-type')).toContain('text/html');
  });
});
