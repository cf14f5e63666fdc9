import { errorCatalogue } from '../../src/errors.js';
import type { WireAnswer } from './wire.js';

/**
 * What every answer must satisfy, whatever the input (docs/reliability.md): no 5xx, and every 4xx
 * is RFC 9457 problem+json whose `code` is in the error catalogue and whose `status` is the HTTP
 * status. Two 5xx are answers about the deployment, not failures on bad input: 503
 * `xmpp_unavailable` (a remote JID and no XMPP server configured) and the 507 quotas (`mailbox_full`,
 * `identity_limit_reached`, `handler_limit_reached`).
 */
export type FindingKind =
  | 'server_error'
  | 'not_problem_json'
  | 'problem_unparsable'
  | 'problem_code_unknown'
  | 'problem_status_mismatch'
  | 'websocket_internal_error'
  | 'valid_request_refused'
  | 'guard_bypassed'
  | 'invalid_xml_stored'
  | 'not_oauth_error'
  | 'redirect_unregistered';

export interface Finding {
  kind: FindingKind;
  /** Short, stable text for grouping findings into classes (status, content type, problem code). */
  signature: string;
  detail: string;
}

/** 5xx answers that describe the deployment (a missing XMPP link, a full mailbox), with their codes. */
export const DEPLOYMENT_5XX: Readonly<Record<string, number>> = {
  xmpp_unavailable: 503,
  mailbox_full: 507,
  // Quotas reached by the fuzzing itself (many valid applications or handlers): state, not input.
  identity_limit_reached: 507,
  handler_limit_reached: 507,
};

/** What kind of body a non-problem answer has, without its variable parts: its `code` or `message`, or its first words. */
export function shape(text: string): string {
  try {
    const body = JSON.parse(text) as { code?: unknown; message?: unknown };
    if (typeof body.code === 'string') return body.code;
    if (typeof body.message === 'string') return JSON.stringify(body.message.slice(0, 40));
  } catch {
    // not JSON
  }
  return text === '' ? '(empty body)' : JSON.stringify(text.replace(/<[^>]*>/g, ' ').replace(/\s+/g, ' ').trim().slice(0, 40));
}

const isCatalogueCode = (code: unknown): code is keyof typeof errorCatalogue => typeof code === 'string' && Object.hasOwn(errorCatalogue, code);

/**
 * Checks one HTTP answer (including a refused WebSocket handshake); undefined when it is fine. An
 * answer to HEAD has no body (RFC 9110 §9.3.2), so only its content type is checked.
 */
export function judgeAnswer(answer: WireAnswer, method = 'GET'): Finding | undefined {
  const { status } = answer;
  if (status < 400) return undefined;
  const type = (answer.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  const text = answer.body.toString('utf8');
  if (type !== 'application/problem+json') {
    const kind: FindingKind = status >= 500 ? 'server_error' : 'not_problem_json';
    return { kind, signature: `${status} ${type || '(no content-type)'} ${method === 'HEAD' ? '(HEAD)' : shape(text)}`, detail: `${status} ${type}: ${text.slice(0, 200)}` };
  }
  if (method === 'HEAD') return undefined;
  let problem: { code?: unknown; status?: unknown };
  try {
    problem = JSON.parse(text) as { code?: unknown; status?: unknown };
  } catch {
    return { kind: 'problem_unparsable', signature: `${status} problem+json unparsable`, detail: text.slice(0, 200) };
  }
  if (status >= 500) {
    if (isCatalogueCode(problem.code) && DEPLOYMENT_5XX[problem.code] === status && problem.status === status) return undefined;
    return { kind: 'server_error', signature: `${status} ${String(problem.code)}`, detail: text.slice(0, 300) };
  }
  if (!isCatalogueCode(problem.code)) {
    return { kind: 'problem_code_unknown', signature: `${status} code ${JSON.stringify(problem.code)}`, detail: text.slice(0, 300) };
  }
  if (problem.status !== status || errorCatalogue[problem.code].status !== status) {
    return { kind: 'problem_status_mismatch', signature: `${status} ${problem.code} (body status ${String(problem.status)})`, detail: text.slice(0, 300) };
  }
  return undefined;
}

/**
 * A valid request (odd only where the protocol allows) must succeed, or be refused only with one
 * of `refusals` (a preflight from another origin: 403): any other refusal is a finding, even as problem+json.
 */
export function judgeValidAnswer(answer: WireAnswer, refusals: readonly number[], method = 'GET'): Finding | undefined {
  if (answer.status < 400 || refusals.includes(answer.status)) return undefined;
  const code = /"code":"([a-z_]+)"/.exec(answer.body.toString('utf8'))?.[1];
  return {
    kind: 'valid_request_refused',
    signature: `${answer.status} ${code ?? (method === 'HEAD' ? '(HEAD)' : (answer.headers['content-type'] ?? ''))}`.trim(),
    detail: `${answer.status}: ${answer.body.toString('utf8').slice(0, 200)}`,
  };
}

/** A guarded route asked without the valid bearer token (none, forged, damaged) must not succeed. */
export function judgeUnauthenticated(answer: WireAnswer): Finding | undefined {
  if (answer.status < 200 || answer.status >= 300) return undefined;
  return { kind: 'guard_bypassed', signature: `${answer.status} without a valid token`, detail: `${answer.status}: ${answer.body.toString('utf8').slice(0, 200)}` };
}

/** Characters XML 1.0 §2.2 does not allow anywhere in a document, and lone surrogates (no character at all). */
const NOT_XML = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * Messages the service stored (a PopMessages answer) are stanzas it would send to an XMPP server:
 * each must be well-formed XML, so no character XML forbids in any text or attribute (`to`, `id`).
 */
export function judgeStoredMessages(answer: WireAnswer): Finding | undefined {
  if (answer.status !== 200) return undefined;
  let messages: Array<{ content?: unknown }>;
  try {
    messages = (JSON.parse(answer.body.toString('utf8')) as { messages?: Array<{ content?: unknown }> }).messages ?? [];
  } catch {
    return undefined;
  }
  const bad = messages.find((m) => typeof m.content === 'string' && NOT_XML.test(m.content));
  if (!bad) return undefined;
  const content = String(bad.content);
  const at = content.search(NOT_XML);
  return { kind: 'invalid_xml_stored', signature: 'stored stanza holds a character XML forbids', detail: JSON.stringify(content.slice(Math.max(0, at - 60), at + 20)) };
}

/**
 * RFC 6455 §7.4.1: 1011 means the server met an unexpected condition, the WebSocket form of a
 * 500. Every other close (1000, 1002, 1007, 1009, the 44xx codes of errors.ts) is an answer.
 */
export function judgeClose(code: number, reason: string): Finding | undefined {
  if (code !== 1011) return undefined;
  return { kind: 'websocket_internal_error', signature: `close ${code} ${reason}`, detail: `server closed the socket with ${code} ${reason}` };
}
