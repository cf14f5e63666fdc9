/**
 * Raw OAuth 2.0 requests, built on fetch with no client library in between, so a test can send what a correct
 * client never would (a wrong verifier, a replayed code, a wrong secret) and read the OP's answer as sent.
 */

/** How a raw request authenticates the client (RFC 6749 §2.3.1; OpenID Connect Core §9). */
export interface RawClient {
  clientId: string;
  clientSecret?: string;
  /** Default: client_secret_basic with a secret, none (client_id in the body) without. */
  method?: 'client_secret_basic' | 'client_secret_post' | 'none';
}

/** The answer as sent: status, the JSON body (RFC 6749 §5.1 tokens or §5.2 `{ error, error_description }`), headers. */
export interface RawAnswer {
  status: number;
  body: Record<string, unknown>;
  headers: Headers;
}

/** A POST to the token endpoint with `params` (form-encoded, RFC 6749 §4.1.3) and the client's credentials. */
export async function tokenRequest(tokenEndpoint: string, params: Record<string, string>, client: RawClient): Promise<RawAnswer> {
  const method = client.method ?? (client.clientSecret === undefined ? 'none' : 'client_secret_basic');
  const body = new URLSearchParams(params);
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' };
  if (method === 'client_secret_basic') {
    // RFC 6749 §2.3.1: id and secret are form-urlencoded before they are joined and base64-encoded.
    const credentials = `${formEncode(client.clientId)}:${formEncode(client.clientSecret ?? '')}`;
    headers.authorization = `Basic ${Buffer.from(credentials).toString('base64')}`;
  } else {
    body.set('client_id', client.clientId);
    if (method === 'client_secret_post') body.set('client_secret', client.clientSecret ?? '');
  }
  const response = await fetch(tokenEndpoint, { method: 'POST', headers, body });
  const text = await response.text();
  return { status: response.status, body: parseObject(text), headers: response.headers };
}

/** Redeems an authorization code (RFC 6749 §4.1.3), with the PKCE verifier when given (RFC 7636 §4.5). */
export function exchangeCode(
  tokenEndpoint: string,
  grant: { code: string; redirectUri: string; codeVerifier?: string },
  client: RawClient,
): Promise<RawAnswer> {
  return tokenRequest(
    tokenEndpoint,
    {
      grant_type: 'authorization_code',
      code: grant.code,
      redirect_uri: grant.redirectUri,
      ...(grant.codeVerifier !== undefined && { code_verifier: grant.codeVerifier }),
    },
    client,
  );
}

/** The OP's metadata (OpenID Connect Discovery §4), read raw. */
export async function fetchMetadata(issuer: string): Promise<Record<string, unknown>> {
  const response = await fetch(`${issuer.replace(/\/$/, '')}/.well-known/openid-configuration`);
  if (!response.ok) throw new Error(`discovery at ${issuer} answered ${response.status}`);
  return parseObject(await response.text());
}

function formEncode(value: string): string {
  return encodeURIComponent(value).replace(/%20/g, '+');
}

/** The body as a JSON object; anything else is kept as `{ raw }` so a test's assertion shows what came back. */
function parseObject(text: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(text);
    if (value !== null && typeof value === 'object' && !Array.isArray(value)) return value as Record<string, unknown>;
  } catch {
    // not JSON: fall through
  }
  return { raw: text };
}
