import { describe, expect, it } from 'vitest';
import { judgeOAuthAnswer } from './oauth-oracle.js';
import type { WireAnswer } from './wire.js';

// The OpenID Provider endpoints' oracle on answers written by hand: what OAuth 2.0 allows passes, what
// would hide a failure (a 5xx, a bare text error, an open redirect) is a finding.
const BASE = 'http://127.0.0.1:4000';
const REGISTERED = ['https://rp.example/cb'];
const answer = (status: number, type: string | undefined, body: string, headers: Record<string, string> = {}): WireAnswer => ({
  status,
  headers: { ...(type === undefined ? {} : { 'content-type': type }), ...headers },
  body: Buffer.from(body),
});
const judge = (a: WireAnswer, method = 'GET') => judgeOAuthAnswer(a, method, REGISTERED, BASE)?.kind;

describe('OAuth answers oracle', () => {
  it('passes OAuth errors, HTML error pages, catalogue problems and redirects to a registered URI or within /oidc', () => {
    expect(judge(answer(400, 'application/json; charset=utf-8', '{"error":"invalid_grant","error_description":"grant request is invalid"}'))).toBeUndefined();
    expect(judge(answer(401, 'application/json', '{"error":"invalid_client"}'))).toBeUndefined();
    expect(judge(answer(400, 'text/html; charset=utf-8', '<!DOCTYPE html><p>redirect_uri did not match</p>'))).toBeUndefined();
    expect(judge(answer(404, 'application/problem+json', '{"code":"not_found","status":404}'))).toBeUndefined();
    expect(judge(answer(303, undefined, '', { location: 'https://rp.example/cb?error=invalid_scope&state=x' }))).toBeUndefined();
    expect(judge(answer(303, undefined, '', { location: '/oidc/interaction/abc' }))).toBeUndefined();
    expect(judge(answer(200, 'application/json', '{}'))).toBeUndefined();
  });

  it('finds 5xx, bare or malformed errors and redirects anywhere else', () => {
    expect(judge(answer(500, 'application/json', '{"error":"server_error"}'))).toBe('server_error');
    expect(judge(answer(404, 'text/plain; charset=utf-8', 'Not Found'))).toBe('not_oauth_error');
    expect(judge(answer(400, 'application/json', '{"message":"bad"}'))).toBe('not_oauth_error');
    expect(judge(answer(400, 'application/json', '{"error":"bad\\"quote"}'))).toBe('not_oauth_error');
    expect(judge(answer(404, 'application/problem+json', '{"code":"no_such_code","status":404}'))).toBe('problem_code_unknown');
    expect(judge(answer(302, undefined, '', { location: 'https://evil.example/cb?code=x' }))).toBe('redirect_unregistered');
    expect(judge(answer(303, undefined, '', { location: 'https://rp.example/cb/../other' }))).toBe('redirect_unregistered');
    expect(judge(answer(303, undefined, '', { location: `${BASE}/healthz` }))).toBe('redirect_unregistered');
  });
});
