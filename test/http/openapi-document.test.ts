import { OIDC_ENDPOINTS } from '../../src/http/oidc-routes.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operationsOf, registeredRoutes, type OpenApiChecker } from '../helpers/openapi-check.js';
import { startDocumentedService } from '../helpers/openapi-service.js';
import type { TestService } from '../helpers/service.js';

/**
 * The OpenAPI document (docs/openapi.md) itself, as the real service publishes it: it is OpenAPI 3.1, its
 * schemas compile, it describes the event channel, and every route is in it (or hidden on purpose).
 * Real answers against it: openapi-answers.test.ts.
 */

let service: TestService;
let doc: Record<string, any>;
let checker: OpenApiChecker;

/** Routes left out of the document on purpose, and why. */
const HIDDEN: Record<string, string> = {
  // The rendered reference itself and its assets (served by @fastify/swagger-ui, which hides them).
  'GET /docs': 'reference page',
  'GET /docs/': 'reference page',
  'GET /docs/static/index.html': 'reference page',
  'GET /docs/static/swagger-initializer.js': 'reference page',
  'GET /docs/*': 'reference page assets',
  'GET /docs/json': 'the document again, for the page',
  'GET /docs/yaml': 'the document as YAML',
  // The web wallet's page: a static app, and a path ending in a slash (docs/openapi.md "Lint"); its files are in.
  'GET /wallet/': 'the wallet app page',
  // The OpenID Provider's endpoints (docs/oidc.md "Endpoints"): its discovery document describes them.
  ...Object.fromEntries(OIDC_ENDPOINTS.flatMap(([path, methods]) => methods.map((m) => [`${m} /oidc${path.replace(/:(\w+)/g, '{$1}')}`, 'OpenID Provider endpoint']))),
  // CORS preflights (@fastify/cors): answered for every path, documented in docs/input.md.
  'OPTIONS *': 'CORS preflight',
};

beforeAll(async () => {
  ({ service, doc, checker } = await startDocumentedService());
});
afterAll(async () => service?.close());

describe('the OpenAPI document', () => {
  it('is OpenAPI 3.1: info, paths, and every operation has responses, each with a description', () => {
    expect(doc.openapi).toMatch(/^3\.1\.\d+$/);
    expect(doc.info).toMatchObject({ title: 'tabwire', version: expect.any(String) });
    expect(doc.servers).toEqual([{ url: service.publicBaseUrl }]);
    const operations = operationsOf(doc);
    expect(operations.length).toBeGreaterThan(25);
    for (const op of operations) {
      const [method, path] = op.split(' ') as [string, string];
      const operation = doc.paths[path][method.toLowerCase()];
      const statuses = Object.keys(operation.responses);
      expect(statuses.length, op).toBeGreaterThan(0);
      for (const status of statuses) {
        expect(status, op).toMatch(/^([1-5]\d\d|[1-5]XX|default)$/);
        expect(operation.responses[status].description, `${op} ${status}`).toEqual(expect.any(String));
      }
      // OpenAPI 3.1 §4.8.12: every path template parameter is declared, in: path, required.
      for (const name of path.match(/\{(\w+)\}/g) ?? []) {
        const parameter = (operation.parameters ?? []).find((p: { name: string; in: string }) => `{${p.name}}` === name && p.in === 'path');
        expect(parameter, `${op} ${name}`).toMatchObject({ required: true });
      }
    }
  });

  it('every schema in it is valid JSON Schema 2020-12 (the dialect of OpenAPI 3.1), references included', () => {
    expect(checker.compileAll()).toBeGreaterThan(50);
  });

  it('describes the event channel: WebSocket, long-poll, and each event\'s data', () => {
    const channel = doc['x-tabwire-channel'];
    expect(channel.websocket).toMatchObject({ path: '/ClientEventsWS', subprotocol: 'ls' });
    expect(channel.longPoll.path).toBe('/ClientEvents');
    expect(Object.keys(channel.events)).toEqual(expect.arrayContaining(['SignatureReceived', 'SignatureReceivedBE', 'SignatureRejected', 'CheckServerInstance', 'EventsLost', 'NOP']));
    for (const name of ['EventFrame', 'RegisterFrame', 'PingFrame', 'UnregisterFrame', 'QuickLoginResult', 'Problem']) expect(doc.components.schemas[name], name).toBeDefined();
    expect(doc.info.description).toContain('/ClientEventsWS');
  });

  it('lists every route the service serves, except the ones hidden on purpose', () => {
    const documented = new Set(operationsOf(doc));
    const routes = registeredRoutes(service.app);
    expect(routes).toContain('POST /QuickLogin');
    const missing = routes.filter((r) => !documented.has(r) && !(r in HIDDEN));
    expect(missing).toEqual([]);
    // And the hidden ones really are out of it.
    expect(Object.keys(HIDDEN).filter((r) => documented.has(r))).toEqual([]);
  });

  it('the reference page is served by the service itself, with its own strict CSP', async () => {
    const page = await fetch(`${service.baseUrl}/docs/`);
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).not.toMatch(/https?:\/\//);
    const csp = page.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("script-src 'self';");
    expect(csp).not.toContain('unsafe');
    for (const asset of ['swagger-ui-bundle.js', 'swagger-initializer.js', 'swagger-ui.css']) {
      expect((await fetch(`${service.baseUrl}/docs/static/${asset}`)).status, asset).toBe(200);
    }
    // The policy is the page's own: the API and the demo keep theirs.
    expect((await fetch(`${service.baseUrl}/healthz`)).headers.get('content-security-policy')).toBeNull();
    expect((await fetch(`${service.baseUrl}/`)).headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
  });
});
