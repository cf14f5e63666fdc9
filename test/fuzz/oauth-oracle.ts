import { judgeAnswer, shape, type Finding } from './oracle.js';
import type { WireAnswer } from './wire.js';

/**
 * What every answer of an OpenID Provider endpoint (the library's, under /oidc) must satisfy. Its errors
 * are the ones OAuth 2.0 and OpenID Connect specify, not problem+json: JSON `{error, error_description}`
 * (RFC 6749 §5.2, RFC 6750 §3.1, RFC 7009 §2.2.1), an HTML page for an authorization error that cannot be
 * sent back to the client (RFC 6749 §4.1.2.1), a redirect to the client's registered redirect URI with
 * `error=` (§4.1.2.1). The service's own refusals in front of it (an unknown path, a method, a rate
 * limit, a body too large) stay problem+json from the catalogue. Never a 5xx, and never a redirect
 * anywhere but a registered URI or the provider itself (an open redirector, RFC 6749 §10.15).
 */

/** RFC 6749 §5.2 (appendix A.7): `error` is one or more of %x20-21 / %x23-5B / %x5D-7E. */
const ERROR_CODE = /^[\x20\x21\x23-\x5b\x5d-\x7e]+$/;

export function judgeOAuthAnswer(answer: WireAnswer, method: string, registered: readonly string[], baseUrl: string): Finding | undefined {
  const { status } = answer;
  if (status >= 300 && status < 400) return judgeRedirect(answer, registered, baseUrl);
  const type = (answer.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (status < 400 || type === 'application/problem+json' || status >= 500) return judgeAnswer(answer, method);
  const text = answer.body.toString('utf8');
  const fail = (why: string): Finding => ({ kind: 'not_oauth_error', signature: `${status} ${type || '(no content-type)'} ${shape(text)}`, detail: `${why}: ${status} ${type}: ${text.slice(0, 200)}` });
  if (method === 'HEAD') return type === 'application/json' || type === 'text/html' ? undefined : fail('neither JSON nor an HTML page');
  if (type === 'text/html') return undefined;
  if (type !== 'application/json') return fail('neither an OAuth error object nor an HTML error page');
  let body: { error?: unknown; error_description?: unknown };
  try {
    body = JSON.parse(text) as typeof body;
  } catch {
    return fail('unparsable JSON');
  }
  if (typeof body.error !== 'string' || !ERROR_CODE.test(body.error)) return fail('no RFC 6749 `error` code');
  if (body.error_description !== undefined && (typeof body.error_description !== 'string' || !ERROR_CODE.test(body.error_description))) return fail('`error_description` outside RFC 6749\'s characters');
  return undefined;
}

/** A redirect stays within the provider's /oidc paths or goes to a registered URI (its query aside), exactly. */
function judgeRedirect(answer: WireAnswer, registered: readonly string[], baseUrl: string): Finding | undefined {
  const location = answer.headers.location;
  if (location === undefined) return undefined;
  let to: URL;
  try {
    to = new URL(location, baseUrl);
  } catch {
    return { kind: 'redirect_unregistered', signature: `${answer.status} to an unparsable Location`, detail: location.slice(0, 300) };
  }
  const own = new URL(baseUrl);
  if (to.origin === own.origin && to.pathname.startsWith('/oidc/')) return undefined;
  const target = `${to.origin}${to.pathname}`;
  if (registered.some((uri) => { const r = new URL(uri); return `${r.origin}${r.pathname}` === target; })) return undefined;
  return { kind: 'redirect_unregistered', signature: `${answer.status} to ${to.origin}`, detail: location.slice(0, 300) };
}
