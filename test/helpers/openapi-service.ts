import { OpenApiChecker, wire } from './openapi-check.js';
import { startService, type TestService } from './service.js';

// The set-up shared by the OpenAPI tests (test/http/openapi-*.test.ts).

/** A running service, the OpenAPI document it publishes, and a checker for that document. */
export interface DocumentedService {
  service: TestService;
  doc: Record<string, any>;
  checker: OpenApiChecker;
}

/**
 * Starts the service the OpenAPI tests run against and fetches its document; the document's own answer
 * (GET /openapi.json) is the first one checked against it.
 */
export async function startDocumentedService(): Promise<DocumentedService> {
  const service = await startService({ longPollHoldSeconds: 1, callbackAllowedHosts: ['127.0.0.1'] });
  try {
    const answer = await wire(await fetch(`${service.baseUrl}/openapi.json`));
    const doc = answer.body as Record<string, any>;
    const checker = new OpenApiChecker(doc);
    checker.check('GET', '/openapi.json', answer);
    return { service, doc, checker };
  } catch (error) {
    await service.close();
    throw error;
  }
}
