import type { OidcClient } from '../store/oidc-store.js';

/** Client metadata as the OpenID Provider library takes it (OpenID Connect Dynamic Client Registration §2 names). */
export interface ClientMetadata {
  client_id: string;
  client_secret?: string;
  client_name?: string;
  redirect_uris: string[];
  post_logout_redirect_uris: string[];
  token_endpoint_auth_method: OidcClient['tokenAuth'];
  subject_type: OidcClient['subjectType'];
  id_token_signed_response_alg: OidcClient['idTokenAlg'];
  grant_types: string[];
  response_types: string[];
}

/**
 * The metadata of a registered client for the library. Only the authorization code flow (OpenID Connect Core
 * §3.1): `response_types` `code`. Refresh tokens only for confidential clients: a public client (a browser or
 * native app) has no secret that binds a refresh token to it, so a stolen one would work for anyone until it
 * expires (RFC 9700 §4.14.2); such a client repeats the login, which takes one scan. A pairwise client's
 * redirect URIs must share one host: the library takes that host as the sector identifier (Core §8.1) and
 * refuses a pairwise client with several hosts and no `sector_identifier_uri`.
 */
export function clientMetadata(client: OidcClient): ClientMetadata {
  const confidential = client.tokenAuth !== 'none';
  return {
    client_id: client.clientId,
    ...(client.clientSecret !== null ? { client_secret: client.clientSecret } : {}),
    ...(client.name !== null ? { client_name: client.name } : {}),
    redirect_uris: [...client.redirectUris],
    post_logout_redirect_uris: [...client.postLogoutRedirectUris],
    token_endpoint_auth_method: client.tokenAuth,
    subject_type: client.subjectType,
    id_token_signed_response_alg: client.idTokenAlg,
    grant_types: confidential ? ['authorization_code', 'refresh_token'] : ['authorization_code'],
    response_types: ['code'],
  };
}
