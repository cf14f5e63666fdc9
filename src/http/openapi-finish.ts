/**
 * The last touches on the generated OpenAPI document (docs/openapi.md "Lint"), so that code generators and
 * linters (Redocly's recommended rules) find what they need on every operation:
 * - `operationId`, derived from the method and the path when a route names none (unique, as method and
 *   path are; URL-safe): `POST /QuickLogin/Sign/{code}` → `postQuickLoginSignCode`;
 * - `security`: `[]` (no credentials) on every operation that declares none, so "no security" is stated,
 *   not left to a reader's guess.
 */

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

/** `POST` + `/Agent/Account/Login` → `postAgentAccountLogin`; `{code}` → `Code`; punctuation dropped. */
export function operationIdOf(method: string, path: string): string {
  const words = path.split(/[^A-Za-z0-9]+/).filter((w) => w !== '');
  return method.toLowerCase() + words.map((w) => w[0]!.toUpperCase() + w.slice(1)).join('');
}

type Operation = { operationId?: string; security?: unknown[] };

/** Fills in `operationId` and `security` where a route's schema left them out; returns the same object. */
export function finishOpenApiDocument<T extends { paths?: Record<string, Record<string, unknown>> }>(document: T): T {
  for (const [path, item] of Object.entries(document.paths ?? {})) {
    for (const method of METHODS) {
      const operation = item[method] as Operation | undefined;
      if (!operation) continue;
      operation.operationId ??= operationIdOf(method, path);
      operation.security ??= [];
    }
  }
  return document;
}
