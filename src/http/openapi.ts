import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { packageRoot } from '../package-root.js';
import { API_DESCRIPTION, CHANNEL_EXTENSION, CHANNEL_SCHEMAS } from './openapi-channel.js';
import { finishOpenApiDocument } from './openapi-finish.js';
import { ProblemSchema } from './openapi-schemas.js';

/**
 * The reference page's own policy (only its routes carry it, never the rest of the service): Swagger UI's
 * assets are served from the service itself (no CDN), it has no inline script or style element, and its
 * logo is a data: image. `connect-src 'self'` lets it fetch the document and "Try it out" requests.
 */
const DOCS_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const version = (): string => (JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as { version: string }).version;

export interface OpenApiOptions {
  /** The service's public base URL: the document's one server. */
  publicBaseUrl: string;
}

/**
 * What the route plugins' schemas need of the instance they run in: the shared schemas they reference
 * (`Problem`, the channel's frames) and the JSON.stringify serializer (see registerOpenApi).
 */
export function registerSharedSchemas(app: FastifyInstance): void {
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));
  for (const schema of [ProblemSchema, ...Object.entries(CHANNEL_SCHEMAS).map(([name, s]) => ({ ...s, $id: name, title: name }))]) {
    app.addSchema(schema);
  }
}

/**
 * OpenAPI 3.1 generated from the route schemas (docs/openapi.md): `GET /openapi.json` and the rendered
 * reference at `/docs`. Must run on the root instance before any route is declared (the generator
 * collects routes as they are added). Also makes response schemas documentation only: answers are
 * serialized with JSON.stringify, as every route without a response schema always was, so documenting a
 * route cannot drop or coerce what it answers, and the OpenAPI test sees exactly what a client gets.
 */
export async function registerOpenApi(app: FastifyInstance, o: OpenApiOptions): Promise<void> {
  registerSharedSchemas(app);
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'tabwire', version: version(), description: API_DESCRIPTION, license: { name: 'Apache-2.0', identifier: 'Apache-2.0' } },
      servers: [{ url: o.publicBaseUrl }],
      tags: [
        { name: 'QuickLogin', description: 'QR login codes and the signing protocol (docs/signing.md, docs/backend.md)' },
        { name: 'Events', description: 'The client event channel (docs/events.md) and its script (docs/events-js.md)' },
        { name: 'Agent', description: 'Agent API: accounts, tokens, identities, XMPP (docs/agent-api.md, docs/xmpp.md)' },
        { name: 'Keys', description: 'Published public keys' },
        { name: 'Operations', description: 'Health, readiness, metrics (docs/deployment.md)' },
        { name: 'Pages', description: 'The demo and signing pages and their assets' },
      ],
      components: {
        securitySchemes: {
          bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'An Agent API token (EdDSA JWT, docs/agent-api.md "Tokens")' },
          apiKey: { type: 'apiKey', in: 'header', name: 'X-Api-Key', description: 'An operator API key (tabwire api-key create)' },
        },
      },
      // OpenAPI allows `x-` extensions on the document; the plugin's types do not name them.
      ...({ 'x-tabwire-channel': CHANNEL_EXTENSION } as object),
    },
    // Components keep their names (Problem, EventFrame, ...) instead of def-N.
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`) },
    transformObject: (documents) => finishOpenApiDocument((documents as { openapiObject: { paths?: Record<string, Record<string, unknown>> } }).openapiObject),
  });
  app.get(
    '/openapi.json',
    { schema: { tags: ['Operations'], summary: 'This OpenAPI 3.1 document', response: { 200: Type.Object({ openapi: Type.String({ pattern: '^3\\.1\\.' }) }, { additionalProperties: true }) } } },
    async (_request, reply) => reply.header('cache-control', 'no-cache').send(app.swagger()),
  );
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    staticCSP: DOCS_CSP,
    // BaseLayout: the reference without Swagger UI's top bar, whose inline SVG logo carries a <style> element the CSP refuses.
    uiConfig: { layout: 'BaseLayout', deepLinking: true, defaultModelsExpandDepth: 0 },
  });
}
