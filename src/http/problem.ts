import { STATUS_CODES } from 'node:http';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { errorCatalogue, TabwireError, type ErrorCode } from '../errors.js';
import { textFormatDetail } from './schema-text.js';
import { PROTOCOL_VERSION, PROTOCOL_VERSION_HEADER } from '../protocol/version.js';

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/** RFC 9457 problem details with the catalogue's stable `code`. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: ErrorCode;
  instance?: string;
  [extension: string]: unknown;
}

export function problemOf(error: TabwireError, instance?: string): Problem {
  const { title, status } = errorCatalogue[error.code];
  return {
    type: `urn:tabwire:problem:${error.code}`,
    title,
    status,
    detail: error.message,
    code: error.code,
    ...(instance === undefined ? {} : { instance }),
    ...error.extra,
  };
}

export function sendProblem(reply: FastifyReply, error: TabwireError, instance?: string): FastifyReply {
  // RFC 9110 §10.2.3: a 429 says when to come back.
  if (typeof error.extra.retryAfter === 'number') reply.header('retry-after', String(error.extra.retryAfter));
  return reply
    .code(error.status)
    .type(PROBLEM_CONTENT_TYPE)
    .header('cache-control', 'no-store')
    .header('x-content-type-options', 'nosniff')
    .send(problemOf(error, instance));
}

/**
 * A whole HTTP/1.1 problem+json response as text, for the places that answer on a raw socket (a refused
 * WebSocket handshake, a request Node's parser refused): same body and headers as sendProblem, and the
 * connection closes after it. `headers` adds fields the refusal needs (Allow, Sec-WebSocket-Version).
 */
export function rawProblemResponse(error: TabwireError, instance?: string, headers: Record<string, string> = {}): string {
  const body = JSON.stringify(problemOf(error, instance));
  const fields = {
    'Content-Type': `${PROBLEM_CONTENT_TYPE}; charset=utf-8`,
    'Content-Length': String(Buffer.byteLength(body)),
    'Cache-Control': 'no-store',
    'X-Content-Type-Options': 'nosniff',
    [PROTOCOL_VERSION_HEADER]: String(PROTOCOL_VERSION),
    ...(typeof error.extra.retryAfter === 'number' ? { 'Retry-After': String(error.extra.retryAfter) } : {}),
    ...headers,
    Connection: 'close',
  };
  const head = Object.entries(fields).map(([name, value]) => `${name}: ${value}\r\n`);
  return `HTTP/1.1 ${error.status} ${STATUS_CODES[error.status] ?? ''}\r\n${head.join('')}\r\n${body}`;
}

/**
 * Fastify's `frameworkErrors`: refusals made before routing, which would otherwise answer Fastify's own JSON.
 * find-my-way refuses a path it cannot percent-decode, and a parameter longer than `maxParamLength` (RFC 9110 §15.5.15).
 */
export function sendFrameworkError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  switch (error.code) {
    case 'FST_ERR_BAD_URL':
      return sendProblem(reply, new TabwireError('url_malformed', 'The path does not decode: a % must start an escape of valid UTF-8 (RFC 3986 §2.1)'), request.url);
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return sendProblem(reply, new TabwireError('uri_too_long', 'A path parameter is longer than the service accepts'), request.url);
    default:
      request.log.error({ err: error }, 'unexpected framework error');
      return sendProblem(reply, new TabwireError('internal_error'), request.url);
  }
}

/** RFC 6901 §3: `~` and `/` in a reference token are written `~0` and `~1`. */
const pointerToken = (name: string): string => name.replace(/~/g, '~0').replace(/\//g, '~1');

type AjvError = NonNullable<FastifyError['validation']>[number] & { propertyName?: string };

/** One ajv error as `{pointer, detail}`: a bad property name points at the name, a text rule says what it refuses. */
function describeValidation(v: AjvError): { pointer: string; detail: string } {
  const at = v.propertyName === undefined ? v.instancePath : `${v.instancePath}/${pointerToken(v.propertyName)}`;
  const detail = (v.keyword === 'format' && textFormatDetail(v.params.format)) || v.message || 'is not valid';
  return { pointer: at === '' ? '/' : at, detail: v.propertyName === undefined ? detail : `property name ${detail}` };
}

/** Fastify's own refusals (body parsing, schema validation) mapped onto the catalogue. */
function fromFastifyError(error: FastifyError): TabwireError | undefined {
  if (error.validation) {
    // ajv adds a summary ("property name must be valid") after the error that says why; keep only the latter.
    const errors = (error.validation as AjvError[]).filter((v) => v.keyword !== 'propertyNames').map(describeValidation);
    const detail = errors.map((e) => `${error.validationContext ?? 'body'}${e.pointer === '/' ? '' : e.pointer} ${e.detail}`).join('; ');
    return new TabwireError('validation_failed', detail, { errors });
  }
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new TabwireError('body_too_large', error.message);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new TabwireError('unsupported_media_type', error.message);
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new TabwireError('malformed_json', error.message);
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new TabwireError('validation_failed', error.message);
  }
  if (error instanceof SyntaxError && error.statusCode === 400) return new TabwireError('malformed_json', error.message);
  return undefined;
}

/** Every error leaves the service as problem+json; unexpected ones are logged and hidden. */
export function registerProblemHandlers(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    const known = error instanceof TabwireError ? error : fromFastifyError(error);
    if (known) return sendProblem(reply, known, request.url);
    if (error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500) {
      request.log.info({ err: error }, 'client error');
      const code: ErrorCode = error.statusCode === 404 ? 'not_found' : error.statusCode === 405 ? 'method_not_allowed' : 'validation_failed';
      return sendProblem(reply, new TabwireError(code, error.message), request.url);
    }
    request.log.error({ err: error }, 'unexpected error');
    return sendProblem(reply, new TabwireError('internal_error'), request.url);
  });
  app.setNotFoundHandler((request, reply) =>
    sendProblem(reply, new TabwireError('not_found', `${request.method} ${request.url.split('?')[0]} does not exist`), request.url),
  );
}
