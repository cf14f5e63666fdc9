import fc from 'fast-check';
import type { FuzzContext } from './context.js';
import { badJsonText, badUtf8, headerSafe, hugeString, oddJsonValue, oddQuery, oddString, percentEncode } from './strings.js';
import { authorizationHeader } from './tokens.js';
import type { WireRequest } from './wire.js';

/**
 * How an HTTP request is assembled from a route's valid shape and generated damage: the method,
 * the target (path, path parameters, query), the headers (content type, cookie, origin, bearer
 * token, odd extras) and the body (the valid body with fields dropped, added or replaced, or not
 * JSON at all). Route tables live in http-routes.ts.
 */
export interface RouteSpec {
  /** e.g. "POST /QuickLogin (QR request)"; failures are grouped by it. */
  name: string;
  method: 'GET' | 'POST';
  /** The target path with valid path parameters, or `damaged` ones (bad encodings, too long, other shapes). */
  path: (ctx: FuzzContext, damaged: boolean) => fc.Arbitrary<string>;
  /** The valid body (JSON object), or text for text/plain routes. */
  body?: (ctx: FuzzContext) => Record<string, unknown> | string;
  /** Near-valid values per field (odd characters inside a valid shape), beside fully odd ones. */
  fields?: (ctx: FuzzContext) => Record<string, fc.Arbitrary<unknown>>;
  /** Behind the bearer guard: a valid token most of the time, so the handler is reached. */
  auth?: boolean;
  /** Sends the context's session cookie (or the one `cookie` names) most of the time. */
  cookie?: boolean | ((ctx: FuzzContext) => string);
  /** The body is a form (application/x-www-form-urlencoded); an array value is a repeated parameter. */
  form?: boolean;
  /**
   * An endpoint of the OpenID Provider library: its errors are OAuth 2.0 / OpenID Connect ones, not
   * problem+json (oracle.ts judgeOAuthAnswer), and it may redirect only to these URIs or within /oidc.
   */
  oauthRedirects?: (ctx: FuzzContext) => readonly string[];
  /** Valid query string to fuzz (GET routes with a querystring schema). */
  query?: (ctx: FuzzContext) => fc.Arbitrary<string>;
  /** Extra headers of the route (X-TabID, Accept, …): valid ones, or `damaged` ones. */
  headers?: (ctx: FuzzContext, damaged: boolean) => fc.Arbitrary<Array<[string, string]>>;
  /** A valid request costs the service a password hash (scrypt, tens of ms): the suite runs fewer of them. */
  expensive?: boolean;
  /** The route answers with stored messages, which must be well-formed XML (oracle.ts judgeStoredMessages). */
  storedMessages?: boolean;
}

export interface HttpCase {
  route: string;
  request: WireRequest;
  /** The request is valid (odd only where the protocol allows): it must be answered below 400, or with one of `refusals`. */
  valid?: { refusals: readonly number[] };
  /** A guarded route without the valid bearer token: it must not be answered 2xx. */
  unauthenticated?: boolean;
  /** The answer lists stored messages (PopMessages): each must be well-formed XML. */
  storedMessages?: boolean;
  /** An OpenID Provider endpoint: judged by OAuth's error rules, redirecting only to these URIs or within /oidc. */
  oauth?: { redirectUris: readonly string[] };
}

type Header = [string, string];
type BodyEdit =
  | { op: 'set'; key: string; value: unknown }
  | { op: 'delete'; key: string }
  | { op: 'replace'; value: unknown }
  | { op: 'text'; text: string }
  | { op: 'bytes'; bytes: Buffer };

const CONTENT_TYPES = [
  'text/plain', 'text/plain; charset=utf-8', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/xml',
  'application/json; charset=utf-16', 'application/json; charset=latin1', 'APPLICATION/JSON', 'application/json;', 'application/problem+json',
  'application/vnd.api+json', 'application/json, text/plain', '*/*', '', 'json', 'application/json; boundary=x; charset="utf-8"',
  'application/json\u0000', 'application/jsonx', 'text/plain; charset=\u00ff',
] as const;

/** Odd headers any request may carry. */
const oddHeader: fc.Arbitrary<Header[]> = fc.oneof(
  fc.constantFrom<Header[]>(
    [['Upgrade', 'h2c'], ['Connection', 'Upgrade, HTTP2-Settings'], ['HTTP2-Settings', 'AAMAAABkAARAAAAAAAIAAAAA']],
    [['Upgrade', 'websocket'], ['Connection', 'Upgrade']],
    [['Upgrade', 'x'.repeat(100)], ['Connection', 'upgrade']],
    [['Expect', '100-continue']],
    [['Expect', 'the-unexpected']],
    [['Transfer-Encoding', 'chunked']],
    [['Transfer-Encoding', 'gzip, chunked']],
    [['Transfer-Encoding', 'identity']],
    [['Content-Encoding', 'gzip']],
    [['Content-Length', '-1']],
    [['Content-Length', '1'], ['Content-Length', '2']],
    [['Content-Length', '99999999999999999999']],
    [['Content-Length', '0']],
    [['Range', 'bytes=0-0,-1']],
    [['If-None-Match', '*']],
    [['If-None-Match', `W/"x", ${'"y",'.repeat(2000)}`]],
    [['If-Modified-Since', 'not a date']],
    [['X-Forwarded-For', '1.2.3.4, ::1, \u0000']],
    [['X-Forwarded-Proto', 'gopher']],
    [['X-Forwarded-Host', 'evil.example']],
    [['Host', 'evil.example']],
    [['Host', '']],
    [['Host', 'a'.repeat(2000)]],
    [['Accept', 'text/html']],
    [['Accept', 'application/json;q=0, text/html;q=0.1, */*;q=oops']],
    [['Accept-Encoding', 'gzip, br, zstd, *']],
    [['Accept-Language', 'x'.repeat(5000)]],
    [['X-Api-Key', 'tw_' + 'a'.repeat(40)]],
    [['X-Last-Event-ID', '-1']],
    [['Sec-Fetch-Site', 'cross-site'], ['Sec-Fetch-Mode', 'no-cors']],
    [['X-HTTP-Method-Override', 'DELETE']],
    [['Forwarded', 'for="_gazonk";proto=javascript']],
  ),
  fc.tuple(fc.constantFrom('X-Fuzz', 'Accept', 'Referer', 'User-Agent', 'X-Requested-With', 'X-TabID', 'X-Last-Event-ID', 'X-Api-Key', 'Cookie'), oddString).map(
    ([name, value]) => [[name, headerSafe(value)]] as Header[],
  ),
  // Header names that are not tokens (RFC 9110 §5.1), and one header over the server's total header limit.
  fc.constantFrom<Header[]>([['X Fuzz', '1']], [['X-Fuzz\u00e9', '1']], [['X-(Fuzz)', '1']], [['X-Fuzz', 'a'.repeat(20_000)]]),
  fc.integer({ min: 50, max: 300 }).map((n) => Array.from({ length: n }, (_, i): Header => [`X-Many-${i}`, String(i)])),
);

/** Cookie headers: `cookie` (the context's session, or a login's cookies), none, or damaged ones. */
function cookieHeader(ctx: FuzzContext, cookie: string, usually: boolean): fc.Arbitrary<Header[]> {
  const sid = /tabwire_sid=([^;]*)/.exec(cookie)?.[1] ?? '';
  return fc.oneof(
    { weight: usually ? 8 : 1, arbitrary: fc.constant<Header[]>([['Cookie', cookie]]) },
    { weight: usually ? 1 : 6, arbitrary: fc.constant<Header[]>([]) },
    {
      weight: 2,
      arbitrary: fc
        .oneof(
          fc.constantFrom(
            `tabwire_sid=${'A'.repeat(43)}`, 'tabwire_sid=', 'tabwire_sid', `tabwire_sid=x; ${cookie}`, `${cookie}; tabwire_sid=x`,
            `tabwire_sid="${sid}"`, `tabwire_sid=%zz`, `tabwire_sid=%E0%A4%A`, `tabwire_sid=${sid}%00`, '=;;;=', ';', `a=${'b'.repeat(10_000)}`,
            Array.from({ length: 300 }, (_, i) => `c${i}=${i}`).join('; '), `__proto__=1; constructor=2; ${cookie}`,
            // The library's interaction cookies: another uid's, empty, a forged signature.
            `_interaction=${'A'.repeat(21)}; _interaction.sig=x`, '_interaction=; _session=', `${cookie.replace(/_interaction=[^;]*/, '_interaction=x')}`,
          ),
          oddString.map((s) => `tabwire_sid=${s}`),
          oddString,
        )
        .map((v): Header[] => [['Cookie', headerSafe(v)]]),
    },
  );
}

/** Origin headers: none (a non-browser client), an allowed one, or one that must be refused. */
function originHeader(ctx: FuzzContext): fc.Arbitrary<Header[]> {
  return fc.oneof(
    { weight: 4, arbitrary: fc.constant<Header[]>([]) },
    { weight: 3, arbitrary: fc.constantFrom(...ctx.allowedOrigins).map((o): Header[] => [['Origin', o]]) },
    {
      weight: 2,
      arbitrary: fc
        .oneof(fc.constantFrom('null', 'http://evil.example', `${ctx.allowedOrigins[0]}.evil.example`, `${ctx.allowedOrigins[0]}/`, 'file://', '*'), oddString)
        .map((o): Header[] => [['Origin', headerSafe(o)]]),
    },
    { weight: 1, arbitrary: fc.constant<Header[]>([['Origin', ctx.allowedOrigins[0]!], ['Origin', 'http://evil.example']]) },
  );
}

function contentType(usual: string): fc.Arbitrary<Header[]> {
  return fc.oneof(
    { weight: 8, arbitrary: fc.constant<Header[]>([['Content-Type', usual]]) },
    { weight: 1, arbitrary: fc.constant<Header[]>([]) },
    { weight: 2, arbitrary: fc.constantFrom(...CONTENT_TYPES).map((t): Header[] => [['Content-Type', t]]) },
  );
}

function bodyEdits(template: Record<string, unknown>, fields: Record<string, fc.Arbitrary<unknown>>): fc.Arbitrary<BodyEdit[]> {
  const keys = [...new Set([...Object.keys(template), ...Object.keys(fields)])];
  const key = keys.length > 0 ? fc.constantFrom(...keys) : fc.constant('x');
  const nearValid = (k: string): fc.Arbitrary<unknown> => fields[k] ?? oddJsonValue;
  const edit: fc.Arbitrary<BodyEdit> = fc.oneof(
    { weight: 8, arbitrary: key.chain((k) => nearValid(k).map((value): BodyEdit => ({ op: 'set', key: k, value }))) },
    { weight: 3, arbitrary: fc.tuple(key, oddJsonValue).map(([k, value]): BodyEdit => ({ op: 'set', key: k, value })) },
    { weight: 2, arbitrary: key.map((k): BodyEdit => ({ op: 'delete', key: k })) },
    { weight: 1, arbitrary: fc.tuple(oddString, oddJsonValue).map(([k, value]): BodyEdit => ({ op: 'set', key: k, value })) },
    { weight: 1, arbitrary: oddJsonValue.map((value): BodyEdit => ({ op: 'replace', value })) },
    { weight: 1, arbitrary: badJsonText.map((text): BodyEdit => ({ op: 'text', text })) },
    { weight: 1, arbitrary: badUtf8.map((bytes): BodyEdit => ({ op: 'bytes', bytes })) },
  );
  return fc.oneof({ weight: 1, arbitrary: fc.constant<BodyEdit[]>([]) }, { weight: 4, arbitrary: fc.array(edit, { minLength: 1, maxLength: 3 }) });
}

/**
 * A form body (RFC 6749 appendix B): an array value is a repeated parameter (RFC 6749 §3.1 forbids
 * them), any other non-string its JSON text.
 */
export function formEncode(value: unknown): string {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return typeof value === 'string' ? value : (JSON.stringify(value) ?? '');
  const form = new URLSearchParams();
  for (const [key, v] of Object.entries(value as Record<string, unknown>)) {
    for (const one of Array.isArray(v) ? v : [v]) form.append(key, typeof one === 'string' ? one : (JSON.stringify(one) ?? ''));
  }
  return form.toString();
}

/** The body after `edits`: JSON text (or a form) of the edited object, or the raw text/bytes an edit put instead. */
function applyEdits(template: Record<string, unknown>, edits: BodyEdit[], encode: (value: unknown) => string = (v) => JSON.stringify(v) ?? 'null'): string | Buffer {
  let value: unknown = { ...template };
  let raw: string | Buffer | undefined;
  for (const e of edits) {
    if (e.op === 'text') raw = e.text;
    else if (e.op === 'bytes') raw = e.bytes;
    else if (e.op === 'replace') value = e.value;
    else if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
      const object = { ...(value as Record<string, unknown>) };
      if (e.op === 'delete') delete object[e.key];
      // defineProperty: a key "__proto__" becomes an own property, as JSON.parse would make it.
      else Object.defineProperty(object, e.key, { value: e.value, enumerable: true, writable: true, configurable: true });
      value = object;
    }
  }
  return raw ?? encode(value);
}

function textBody(valid: string): fc.Arbitrary<string | Buffer> {
  return fc.oneof(
    { weight: 4, arbitrary: fc.constant(valid) },
    { weight: 3, arbitrary: oddString },
    { weight: 1, arbitrary: hugeString },
    { weight: 1, arbitrary: badUtf8 },
  );
}

const OTHER_METHODS = ['HEAD', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'TRACE', 'PROPFIND', 'FUZZ', 'get', 'POST', 'GET'] as const;

/**
 * Which part of a request is damaged. Damage to one part at a time, the rest valid, reaches the
 * code behind the first checks (a bad `message` only matters with a good token and content type);
 * `all` damages every part at once.
 */
type Focus = 'body' | 'headers' | 'target' | 'method' | 'all';

/** `body`: only the body is damaged, so the handler is reached; `request`: the rest of the request; `any`: either. */
export type DamagedPart = 'body' | 'request' | 'any';

const FOCUS: Record<DamagedPart, fc.Arbitrary<Focus>> = {
  body: fc.constant('body'),
  request: fc.oneof(
    { weight: 3, arbitrary: fc.constant<Focus>('headers') },
    { weight: 2, arbitrary: fc.constant<Focus>('target') },
    { weight: 1, arbitrary: fc.constant<Focus>('method') },
    { weight: 2, arbitrary: fc.constant<Focus>('all') },
  ),
  any: fc.oneof(
    { weight: 6, arbitrary: fc.constant<Focus>('body') },
    { weight: 3, arbitrary: fc.constant<Focus>('headers') },
    { weight: 2, arbitrary: fc.constant<Focus>('target') },
    { weight: 1, arbitrary: fc.constant<Focus>('method') },
    { weight: 2, arbitrary: fc.constant<Focus>('all') },
  ),
};

/** Generated requests for one route, damaged in `part`. */
export function routeCase(ctx: FuzzContext, route: RouteSpec, part: DamagedPart = 'any'): fc.Arbitrary<HttpCase> {
  return FOCUS[part].chain((focus) => damagedRequest(ctx, route, focus));
}

function damagedRequest(ctx: FuzzContext, route: RouteSpec, focus: Focus): fc.Arbitrary<HttpCase> {
  const damaged = (part: Focus) => focus === part || focus === 'all';
  const template = route.body?.(ctx);
  const isText = typeof template === 'string';
  const validBody: string | undefined = template === undefined ? undefined : isText ? template : route.form ? formEncode(template) : JSON.stringify(template);
  const body: fc.Arbitrary<string | Buffer | undefined> = !damaged('body')
    ? fc.constant(validBody)
    : template === undefined
      ? fc.oneof(badJsonText, oddString)
      : isText
        ? textBody(template)
        : bodyEdits(template, route.fields?.(ctx) ?? {}).map((edits) => applyEdits(template, edits, route.form ? formEncode : undefined));
  const validAuth: Header[] = route.auth && ctx.jwt ? [['Authorization', `Bearer ${ctx.jwt}`]] : [];
  const usualType = isText ? 'text/plain;charset=UTF-8' : route.form ? 'application/x-www-form-urlencoded' : 'application/json';
  const validContentType: Header[] = template === undefined ? [] : [['Content-Type', usualType]];
  const cookie = typeof route.cookie === 'function' ? route.cookie(ctx) : ctx.cookie;
  const validCookie: Header[] = route.cookie ? [['Cookie', cookie]] : [];
  const headers = damaged('headers')
    ? fc
        .record({
          contentType: template === undefined ? fc.oneof({ weight: 4, arbitrary: fc.constant<Header[]>([]) }, { weight: 1, arbitrary: contentType('application/json') }) : contentType(usualType),
          cookie: cookieHeader(ctx, cookie, route.cookie !== undefined && route.cookie !== false),
          origin: originHeader(ctx),
          auth: route.auth ? authorizationHeader(ctx.jwt, ctx.attackerKey, ctx.serviceJwk) : fc.oneof({ weight: 4, arbitrary: fc.constant<Header[]>([]) }, { weight: 1, arbitrary: authorizationHeader(ctx.jwt, ctx.attackerKey, ctx.serviceJwk) }),
          extra: route.headers?.(ctx, true) ?? fc.constant<Header[]>([]),
          odd: fc.oneof({ weight: 1, arbitrary: fc.constant<Header[][]>([]) }, { weight: 2, arbitrary: fc.array(oddHeader, { minLength: 1, maxLength: 2 }) }),
        })
        .map((h) => [...h.contentType, ...h.cookie, ...h.origin, ...h.auth, ...h.extra, ...h.odd.flat()])
    : (route.headers?.(ctx, false) ?? fc.constant<Header[]>([])).map((extra) => [...validContentType, ...validCookie, ...validAuth, ...extra]);
  const query = route.query?.(ctx) ?? (damaged('target') ? oddQuery : fc.constant(''));
  return fc
    .record({
      // The route's own method first: fast-check shrinks towards it, so a minimal failing case keeps it.
      method: damaged('method') ? fc.constantFrom<string>(route.method, ...OTHER_METHODS.filter((m) => m !== route.method)) : fc.constant<string>(route.method),
      version: damaged('method') ? fc.option(fc.constantFrom('HTTP/1.0', 'HTTP/0.9', 'HTTP/2.0', 'HTTP/1.2', 'HTTP/1.1 x', 'http/1.1', ''), { nil: undefined }) : fc.constant(undefined),
      path: route.path(ctx, damaged('target')),
      query,
      headers,
      body,
    })
    .map(({ method, version, path, query, headers, body }) => ({
      route: route.name,
      // Only where the request still names the guarded route (a damaged target or method names another one).
      ...(route.auth && !damaged('target') && !damaged('method') && !carriesValidToken(headers, ctx.jwt) ? { unauthenticated: true } : {}),
      ...(route.storedMessages ? { storedMessages: true } : {}),
      ...(route.oauthRedirects ? { oauth: { redirectUris: route.oauthRedirects(ctx) } } : {}),
      request: { method, target: path + query, headers, ...(version === undefined ? {} : { version }), ...(body === undefined ? {} : { body }) },
    }));
}

/**
 * Whether the request authenticates with the valid token. Node keeps the first of repeated
 * Authorization headers and trims the value; the scheme is case-insensitive (RFC 9110 §11.1).
 */
function carriesValidToken(headers: Header[], jwt: string | undefined): boolean {
  const value = headers.find(([name]) => name.toLowerCase() === 'authorization')?.[1].trim();
  if (value === undefined || jwt === undefined) return false;
  const match = /^bearer +(\S+)$/i.exec(value);
  return match?.[1] === jwt;
}

/** A login code path segment: the context's live code, or a well-formed unknown one. */
export function codeSegment(ctx: FuzzContext): fc.Arbitrary<string> {
  return fc.oneof({ weight: 2, arbitrary: fc.constant(ctx.code ?? 'AAAAAAAAAAAAAAAAAAAAAA') }, { weight: 1, arbitrary: fc.stringMatching(/^[A-Za-z0-9_-]{22}$/) });
}

export { percentEncode };
