/**
 * The service's HTTP API as the wallet uses it (docs/agent-api.md, docs/signing.md). Refusals are
 * problem+json (RFC 9457); their `detail` is shown to the person as text.
 */
import type { Decision } from './challenge.js';
import type { IdentityView, SignInfo } from './request.js';

export class ApiError extends Error {
  override name = 'ApiError';
  constructor(
    message: string,
    readonly status: number,
    readonly code: string | undefined,
  ) {
    super(message);
  }
}

async function answer<T>(response: Response): Promise<T> {
  const body: unknown = await response.json().catch(() => undefined);
  if (!response.ok) {
    const problem = (typeof body === 'object' && body !== null ? body : {}) as { detail?: unknown; title?: unknown; code?: unknown };
    const text = typeof problem.detail === 'string' ? problem.detail : typeof problem.title === 'string' ? problem.title : `HTTP ${response.status}`;
    throw new ApiError(text, response.status, typeof problem.code === 'string' ? problem.code : undefined);
  }
  return body as T;
}

const JSON_HEADERS = { 'content-type': 'application/json', accept: 'application/json' };

export class Api {
  constructor(readonly base: string) {}

  private url(path: string): string {
    return new URL(path, this.base).href;
  }

  async post<T>(path: string, body: unknown, headers: Record<string, string> = {}): Promise<T> {
    const response = await fetch(this.url(path), { method: 'POST', headers: { ...JSON_HEADERS, ...headers }, body: JSON.stringify(body), credentials: 'omit' });
    return answer<T>(response);
  }

  async get<T>(path: string, headers: Record<string, string> = {}): Promise<T> {
    return answer<T>(await fetch(this.url(path), { headers: { accept: 'application/json', ...headers }, credentials: 'omit' }));
  }

  createAccount(userName: string, password: string, apiKey: string): Promise<{ userName: string }> {
    return this.post('/Agent/Account/Create', { userName, password }, apiKey === '' ? {} : { 'x-api-key': apiKey });
  }

  login(userName: string, password: string): Promise<{ jwt: string; expires: number }> {
    return this.post('/Agent/Account/Login', { userName, password, seconds: 3600 });
  }

  apply(jwt: string, body: unknown): Promise<{ identity: IdentityView }> {
    return this.post('/Agent/Legal/ApplyId', body, { authorization: `Bearer ${jwt}` });
  }

  identity(jwt: string, id: string): Promise<{ identity: IdentityView }> {
    return this.get(`/Agent/Legal/GetIdentity?id=${encodeURIComponent(id)}`, { authorization: `Bearer ${jwt}` });
  }

  async signInfo(signUrl: URL): Promise<SignInfo> {
    return answer<SignInfo>(await fetch(signUrl.href, { headers: { accept: 'application/json' }, credentials: 'omit' }));
  }

  /** `binding`: the token the fetch of a scan-limited code gave this app; the service refuses the decision without it. */
  async decide(signUrl: URL, legalId: string, signature: string, decision: Decision, binding?: string): Promise<{ state: string }> {
    const response = await fetch(signUrl.href, {
      method: 'POST',
      headers: binding === undefined ? JSON_HEADERS : { ...JSON_HEADERS, 'tabwire-binding': binding },
      body: JSON.stringify({ legalId, signature, decision }),
      credentials: 'omit',
    });
    return answer<{ state: string }>(response);
  }
}
