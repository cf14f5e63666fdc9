// The package ships no type declarations: what the service uses of it, typed by hand from its
// documentation (node_modules/oidc-provider/docs/README.md) and source.
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http';

  export type AnyObject = Record<string, unknown>;

  /** What a custom adapter returns and takes: the library's record of one model instance. */
  export interface AdapterPayload extends AnyObject {
    grantId?: string;
    uid?: string;
    userCode?: string;
    consumed?: number;
    jti?: string;
  }

  export interface Adapter {
    upsert(id: string, payload: AdapterPayload, expiresIn?: number): Promise<void>;
    find(id: string): Promise<AdapterPayload | undefined>;
    findByUid(uid: string): Promise<AdapterPayload | undefined>;
    findByUserCode(userCode: string): Promise<AdapterPayload | undefined>;
    consume(id: string): Promise<void>;
    destroy(id: string): Promise<void>;
    revokeByGrantId(grantId: string): Promise<void>;
  }

  export type AdapterFactory = (model: string) => Adapter;

  /** What findAccount returns. */
  export interface Account {
    accountId: string;
    claims(use: 'id_token' | 'userinfo', scope: string, claims: AnyObject, rejected: string[]): Promise<AnyObject> | AnyObject;
  }

  export interface ClientLike {
    clientId: string;
    clientName?: string;
    redirectUris?: string[];
    sectorIdentifier?: string;
    subjectType?: string;
    [key: string]: unknown;
  }

  export interface KoaContextWithOIDC {
    oidc: {
      client?: ClientLike;
      params?: AnyObject;
      [key: string]: unknown;
    };
    [key: string]: unknown;
  }

  export interface InteractionDetails {
    uid: string;
    jti: string;
    exp: number;
    returnTo: string;
    prompt: { name: string; reasons: string[]; details: AnyObject };
    params: AnyObject & { client_id?: string; redirect_uri?: string; scope?: string; claims?: string };
    session?: { accountId?: string; uid?: string };
    grantId?: string;
    lastSubmission?: AnyObject;
    result?: AnyObject;
  }

  export interface Grant {
    jti: string;
    addOIDCScope(scope: string): void;
    addOIDCClaims(claims: string[]): void;
    save(): Promise<string>;
  }

  export interface InteractionResult extends AnyObject {
    login?: { accountId: string; amr?: string[]; acr?: string; remember?: boolean; ts?: number };
    consent?: { grantId: string };
    error?: string;
    error_description?: string;
  }

  export interface ErrorOut {
    error: string;
    error_description?: string;
    [key: string]: unknown;
  }

  export type Configuration = AnyObject;

  export class errors {
    static OIDCProviderError: new (...args: unknown[]) => Error;
  }

  export interface Check {
    reason: string;
  }

  export const interactionPolicy: {
    base(): { get(name: string): { checks: { push(check: unknown): void } } | undefined } & unknown[];
    Check: new (reason: string, description: string, error: string | ((ctx: KoaContextWithOIDC) => unknown), check: (ctx: KoaContextWithOIDC) => unknown) => Check;
  };

  export default class Provider {
    constructor(issuer: string, configuration?: Configuration);
    readonly issuer: string;
    proxy: boolean;
    callback(): (req: IncomingMessage, res: ServerResponse) => void;
    interactionDetails(req: IncomingMessage, res: ServerResponse): Promise<InteractionDetails>;
    interactionResult(req: IncomingMessage, res: ServerResponse, result: InteractionResult, options?: { mergeWithLastSubmission?: boolean }): Promise<string>;
    on(event: string, listener: (...args: unknown[]) => void): this;
    readonly Grant: new (properties: { accountId: string; clientId: string }) => Grant;
    readonly Client: { find(id: string): Promise<ClientLike | undefined> };
    readonly AuthorizationCode: {
      new (properties: AnyObject): { save(): Promise<string> };
      find(id: string, options?: AnyObject): Promise<(AnyObject & { consumed?: number; consume(): Promise<void> }) | undefined>;
    };
  }
}
