import { expect } from 'vitest';
import { createApiKey } from '../../src/agent/api-keys.js';
import { post } from './http.js';
import { startService, type TestService } from './service.js';

// The set-up and check shared by the bad-input tests (test/integration/bad-input-*.test.ts).

/** The one origin the service allows (CORS). */
export const ALLOWED_ORIGIN = 'https://page.example';

/**
 * Starts a service that allows ALLOWED_ORIGIN, with the accounts ada and bob (password "analytical
 * engine"); returns it with a token of ada's.
 */
export async function startBadInputService(): Promise<{ service: TestService; jwt: string }> {
  const service = await startService({ allowedOrigins: [ALLOWED_ORIGIN] });
  try {
    const { key } = await createApiKey(service.store.apiKeys, service.clock, null);
    for (const user of ['ada', 'bob']) {
      await post(service, '/Agent/Account/Create', { userName: user, password: 'analytical engine' }, { 'x-api-key': key });
    }
    const jwt = (await post(service, '/Agent/Account/Login', { userName: 'ada', password: 'analytical engine', seconds: 3600 })).body.jwt;
    return { service, jwt };
  } catch (error) {
    await service.close();
    throw error;
  }
}

/** A problem+json answer with `status` and `code`. */
export function expectProblem(answer: { status: number; contentType: string; body: any }, status: number, code: string): void {
  expect(answer.status).toBe(status);
  expect(answer.contentType).toContain('application/problem+json');
  expect(answer.body).toMatchObject({ status, code, type: `urn:tabwire:problem:${code}` });
}
