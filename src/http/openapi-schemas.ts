import { Type, type TSchema } from '@sinclair/typebox';
import { errorCatalogue, type ErrorCode } from '../errors.js';
import { PROBLEM_CONTENT_TYPE } from './problem.js';

/**
 * Response schemas shared by the routes, for the OpenAPI document (docs/openapi.md). They describe what
 * the handlers answer; they never change it: the service serializes answers with JSON.stringify
 * (http/openapi.ts), so a schema cannot drop or coerce a field, and test/http/openapi-answers.test.ts
 * checks real answers against them.
 */

const ERROR_CODES = Object.keys(errorCatalogue) as ErrorCode[];

/** A string enum (documentation only, so one `enum` rather than TypeBox's union of literals). */
const codeEnum = (codes: readonly ErrorCode[], description?: string) =>
  Type.Unsafe<ErrorCode>({ type: 'string', enum: [...codes], ...(description === undefined ? {} : { description }) });

/** RFC 9457 problem details with the catalogue's stable `code` (docs/errors.md); `$id` makes it a component. */
export const ProblemSchema = Type.Object(
  {
    type: Type.String({ description: '`urn:tabwire:problem:<code>`' }),
    title: Type.String({ description: 'Fixed per code' }),
    status: Type.Integer({ minimum: 400, maximum: 599 }),
    detail: Type.String({ description: 'What went wrong this time' }),
    code: codeEnum(ERROR_CODES, 'Stable error code (docs/errors.md)'),
    instance: Type.Optional(Type.String({ description: 'The request path' })),
    errors: Type.Optional(
      Type.Array(Type.Object({ pointer: Type.String({ description: 'JSON Pointer into the input' }), detail: Type.String() }), {
        description: 'validation_failed: one entry per bad field',
      }),
    ),
    retryAfter: Type.Optional(Type.Integer({ minimum: 0, description: 'Seconds, as in the Retry-After header' })),
    limit: Type.Optional(Type.String({ description: 'rate_limited by a request rate limit: which one' })),
  },
  { $id: 'Problem', title: 'Problem', description: 'RFC 9457 problem details (application/problem+json)' },
);

/** Refusals any route can make: an unexpected error, and a store or shared state out of reach. */
const ALWAYS: readonly ErrorCode[] = ['internal_error', 'store_unavailable', 'shared_state_unavailable'];

/** Refusals of any JSON body before the handler runs (http/problem.ts). */
export const JSON_BODY: readonly ErrorCode[] = ['validation_failed', 'malformed_json', 'body_too_large', 'unsupported_media_type'];

/** The bearer guard's refusals (http/bearer.ts, agent/tokens.ts). */
export const BEARER: readonly ErrorCode[] = [
  'token_missing',
  'token_malformed',
  'token_expired',
  'token_not_yet_valid',
  'token_algorithm_not_allowed',
  'token_key_unknown',
  'token_signature_invalid',
  'token_claims_invalid',
  'token_account_unknown',
  'account_disabled',
];

/**
 * The problem responses of a route, one per status, each naming the codes it may carry (so a code the
 * route answers but the document does not list fails the OpenAPI test).
 */
export function problems(...codes: ReadonlyArray<ErrorCode | readonly ErrorCode[]>): Record<number, unknown> {
  const byStatus = new Map<number, Set<ErrorCode>>();
  for (const code of [...codes.flat(), ...ALWAYS]) {
    const { status } = errorCatalogue[code];
    byStatus.set(status, (byStatus.get(status) ?? new Set()).add(code));
  }
  return Object.fromEntries(
    [...byStatus].map(([status, set]) => {
      const listed = [...set];
      return [
        status,
        {
          description: listed.map((c) => `\`${c}\``).join(', '),
          content: {
            [PROBLEM_CONTENT_TYPE]: {
              schema: Type.Intersect([Type.Ref(ProblemSchema.$id!), Type.Object({ code: codeEnum(listed) })]),
            },
          },
        },
      ];
    }),
  );
}

/** A JSON answer. */
export const json = (schema: TSchema, description: string) => ({ description, content: { 'application/json': { schema } } });

/** An answer without a body (`type: 'null'` is how the generator leaves out `content`). */
export const noBody = (description: string) => ({ type: 'null', description });

/** An answer that is not JSON (a page, a script, an image, text). */
export const media = (type: string, description: string, schema: TSchema = Type.String()) => ({ description, content: { [type]: { schema } } });

/** Bytes (an image, a file): OpenAPI 3.1 describes them as a string with an encoding (RFC 2045 "binary"). */
export const binary = () => Type.Unsafe<Buffer>({ type: 'string', contentEncoding: 'binary' });

/** A JWK Set (RFC 7517 §5). */
export const JwkSet = Type.Object({ keys: Type.Array(Type.Object({ kty: Type.String(), kid: Type.Optional(Type.String()) }, { additionalProperties: true })) });

/**
 * Route config that documents `extra` (headers, body) in place of what the route's schema validates, for the
 * few routes that check a field in the handler so its refusal keeps its own code (X-TabID → `tab_id_missing`,
 * the two kinds of `/QuickLogin` body → `request_kind_ambiguous`). Validation is unchanged.
 */
export const documentAs = (extra: Record<string, unknown>) => ({
  swaggerTransform: ({ schema, url }: { schema: unknown; url: string }) => ({ schema: { ...(schema as object), ...extra }, url }),
});
