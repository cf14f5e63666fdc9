// The minimal surface of oidc-provider 9 (panva) that the project uses; the package ships no types. Names
// follow the library's documentation (and @types/oidc-provider), so a fuller declaration can replace this one.

declare module 'oidc-provider' {
  /** What the library stores of one record: its own JSON-serialisable fields (lib/models/*.js IN_PAYLOAD). */
  export interface AdapterPayload {
    [key: string]: unknown;
    jti?: string;
    kind?: string;
    grantId?: string;
    /** A Session's second key. */
    uid?: string;
    userCode?: string;
    /** Epoch seconds when consumed; set by the adapter's `find` (lib/adapters/memory_adapter.js). */
    consumed?: unknown;
  }

  /** One model's storage (lib/adapters/memory_adapter.js is the reference). */
  export interface Adapter {
    upsert(id: string, payload: AdapterPayload, expiresIn?: number): Promise<void>;
    find(id: string): Promise<AdapterPayload | undefined>;
    findByUid(uid: string): Promise<AdapterPayload | undefined>;
    findByUserCode(userCode: string): Promise<AdapterPayload | undefined>;
    consume(id: string): Promise<void>;
    destroy(id: string): Promise<void>;
    revokeByGrantId(grantId: string): Promise<void>;
  }

  /** The `adapter` option: constructed (or called) once per model with the model's name. */
  export type AdapterConstructor = new (name: string) => Adapter;
  export type AdapterFactory = (name: string) => Adapter;

  export interface Configuration {
    adapter?: AdapterConstructor | AdapterFactory;
    [option: string]: unknown;
  }

  export namespace errors {
    class OIDCProviderError extends Error {
      error: string;
      error_description?: string;
      error_detail?: string;
      status: number;
      statusCode: number;
      expose: boolean;
    }
    /** 400 invalid_grant (RFC 6749 §5.2); the argument is the detail (logged, not sent). */
    class InvalidGrant extends OIDCProviderError {
      constructor(detail?: string);
    }
    /** 400 invalid_request_uri (RFC 9126 §2.3). */
    class InvalidRequestUri extends OIDCProviderError {
      constructor(description?: string);
    }
  }

  /** A stored model instance (lib/models/base_model.js): its payload fields, and saving. */
  interface ModelInstance {
    [field: string]: unknown;
    jti?: string;
    consumed?: unknown;
    readonly isValid: boolean;
    save(ttl?: number): Promise<string>;
    consume(): Promise<void>;
    destroy(): Promise<void>;
  }

  interface ModelClass {
    new (payload: Record<string, unknown>): ModelInstance;
    find(id: string, options?: { ignoreExpiration?: boolean }): Promise<ModelInstance | undefined>;
  }

  interface ClientInstance {
    [field: string]: unknown;
    clientId: string;
    metadata(): Record<string, unknown>;
  }

  class Provider {
    constructor(issuer: string, configuration?: Configuration);
    readonly issuer: string;
    readonly Client: { find(id: string): Promise<ClientInstance | undefined> };
    readonly AuthorizationCode: ModelClass;
    readonly Grant: ModelClass;
    readonly Session: ModelClass & { findByUid(uid: string): Promise<ModelInstance | undefined> };
  }

  export { Provider };
  export default Provider;
}
