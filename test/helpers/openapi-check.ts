import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import formatsModule from 'ajv-formats';
import type { FastifyInstance } from 'fastify';
import { ajvTextFormats } from '../../src/http/schema-text.js';

// ajv-formats is CommonJS with `exports.default`; under NodeNext the default import is the module object.
const addFormats = ((formatsModule as unknown as { default?: unknown }).default ?? formatsModule) as (ajv: Ajv2020) => Ajv2020;

type Json = Record<string, any>;

/** An answer as the test saw it on the wire. */
export interface WireAnswer {
  status: number;
  /** The Content-Type header ('' when none). */
  contentType: string;
  /** Parsed JSON for JSON media types, else the raw bytes (or undefined when the answer had no body). */
  body: unknown;
}

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

/** Every operation of the document as `METHOD path`. */
export const operationsOf = (doc: Json): string[] =>
  Object.entries(doc.paths as Json).flatMap(([path, item]) => METHODS.filter((m) => m in item).map((m) => `${m.toUpperCase()} ${path}`));

/**
 * Closes every object schema that lists its properties and says nothing of others (additionalProperties:
 * false), so an answer with a field the document does not name fails. The published document stays open:
 * clients must accept additive fields (the version policy); only this test is strict. Members of an allOf
 * stay open (each names only part of the object).
 */
function closeObjects(node: unknown, inAllOf = false): void {
  if (Array.isArray(node)) {
    for (const item of node) closeObjects(item, inAllOf);
    return;
  }
  if (node === null || typeof node !== 'object') return;
  const schema = node as Json;
  if (!inAllOf && schema.properties !== undefined && typeof schema.properties === 'object' && !('additionalProperties' in schema) && !('patternProperties' in schema)) {
    schema.additionalProperties = false;
  }
  for (const [key, value] of Object.entries(schema)) {
    if (key === 'properties' && value && typeof value === 'object') {
      for (const property of Object.values(value as Json)) closeObjects(property);
    } else {
      closeObjects(value, key === 'allOf');
    }
  }
}

const JSON_MEDIA = /^application\/(?:[\w.+-]+\+)?json$/;
const mediaTypeOf = (contentType: string): string => contentType.split(';')[0]!.trim().toLowerCase();
const pointerToken = (s: string): string => s.replace(/~/g, '~0').replace(/\//g, '~1');

/**
 * Checks real answers against an OpenAPI 3.1 document with ajv (JSON Schema 2020-12, the dialect of OAS 3.1
 * Schema Objects), and remembers which operations and statuses were exercised.
 */
export class OpenApiChecker {
  readonly ajv: Ajv2020;
  /** `METHOD path` → statuses seen. */
  readonly seen = new Map<string, Set<string>>();
  private readonly validators = new Map<string, ValidateFunction>();

  constructor(readonly doc: Json) {
    // strict off: OpenAPI's own keywords (example, x-...) sit beside JSON Schema ones.
    this.ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false, formats: ajvTextFormats });
    addFormats(this.ajv);
    const strict = structuredClone(doc);
    closeObjects(strict.components);
    closeObjects(strict.paths);
    this.ajv.addSchema(strict, 'openapi.json');
  }

  /** Compiles every schema the document holds, so each is valid JSON Schema 2020-12 (throws otherwise). */
  compileAll(): number {
    let count = 0;
    for (const name of Object.keys(this.doc.components?.schemas ?? {})) {
      this.ajv.compile({ $ref: `openapi.json#/components/schemas/${pointerToken(name)}` });
      count++;
    }
    for (const op of operationsOf(this.doc)) {
      const [method, path] = op.split(' ') as [string, string];
      const operation = this.doc.paths[path][method.toLowerCase()];
      for (const [status, response] of Object.entries(operation.responses as Json)) {
        for (const type of Object.keys((response as Json).content ?? {})) {
          this.validator(method, path, status, type);
          count++;
        }
      }
    }
    return count;
  }

  private validator(method: string, path: string, status: string, type: string): ValidateFunction {
    const pointer = ['paths', path, method.toLowerCase(), 'responses', status, 'content', type, 'schema'].map(pointerToken).join('/');
    let validate = this.validators.get(pointer);
    if (!validate) {
      validate = this.ajv.compile({ $ref: `openapi.json#/${pointer}` });
      this.validators.set(pointer, validate);
    }
    return validate;
  }

  /**
   * Throws unless the document has the operation, a response for the status (exact, or `4XX`-style, or
   * `default`), the answer's media type among that response's content (none when it has no body), and a
   * JSON body that validates against its schema. Records the status as exercised.
   */
  check(method: string, path: string, answer: WireAnswer): void {
    const op = `${method} ${path}`;
    const operation = this.doc.paths[path]?.[method.toLowerCase()];
    if (!operation) throw new Error(`${op} is not in the document`);
    const status = String(answer.status);
    const key = [status, `${status[0]}XX`, 'default'].find((k) => k in operation.responses);
    if (key === undefined) throw new Error(`${op} answered ${status}, which the document does not list (${Object.keys(operation.responses).join(', ')})`);
    const content = (operation.responses[key].content ?? {}) as Json;
    const hasBody = answer.body !== undefined && !(Buffer.isBuffer(answer.body) && answer.body.length === 0);
    if (!hasBody) {
      if (Object.keys(content).length > 0 && answer.status !== 304) throw new Error(`${op} ${status}: the document promises a body, the answer has none`);
    } else {
      const type = mediaTypeOf(answer.contentType);
      if (!(type in content)) throw new Error(`${op} ${status}: Content-Type ${answer.contentType} is not documented (${Object.keys(content).join(', ') || 'no content'})`);
      if (JSON_MEDIA.test(type)) {
        const validate = this.validator(method, path, key, type);
        if (!validate(answer.body)) {
          throw new Error(`${op} ${status}: the body does not match the document: ${this.ajv.errorsText(validate.errors)}\n${JSON.stringify(answer.body).slice(0, 500)}`);
        }
      }
    }
    const statuses = this.seen.get(op) ?? new Set<string>();
    this.seen.set(op, statuses.add(status));
  }

  /** Validates a value against a schema by JSON Pointer into the document (e.g. an event's data). */
  validates(pointer: string, value: unknown): string | undefined {
    const validate = this.ajv.compile({ $ref: `openapi.json#${pointer}` });
    return validate(value) ? undefined : this.ajv.errorsText(validate.errors);
  }
}

/** Fetches and parses an answer for OpenApiChecker.check (JSON media parsed, everything else as bytes). */
export async function wire(response: Response): Promise<WireAnswer & { headers: Headers }> {
  const contentType = response.headers.get('content-type') ?? '';
  const bytes = Buffer.from(await response.arrayBuffer());
  const body = bytes.length === 0 ? undefined : JSON_MEDIA.test(mediaTypeOf(contentType)) ? JSON.parse(bytes.toString('utf8')) : bytes;
  return { status: response.status, contentType, body, headers: response.headers };
}

/**
 * Every route Fastify serves, as `METHOD path` with OpenAPI's `{param}` syntax, read from printRoutes (Fastify has
 * no route list of its own). HEAD routes Fastify adds for GETs are left out.
 */
export function registeredRoutes(app: FastifyInstance): string[] {
  const stack: string[] = [];
  const routes: string[] = [];
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
    const match = /^([│ ]*)[├└]── (.*?)(?: \(([A-Z, ]+)\))?$/u.exec(line);
    if (!match) continue;
    const depth = match[1]!.length / 4;
    stack.length = depth;
    stack[depth] = match[2]!;
    const path = stack.join('').replace(/:(\w+)/g, '{$1}');
    for (const method of (match[3] ?? '').split(', ').filter((m) => m !== '' && m !== 'HEAD')) routes.push(`${method} ${path}`);
  }
  return routes;
}
