import { Type, type Static } from '@sinclair/typebox';

/**
 * The whole configuration of one tabwire node. Every key can be set in the JSON file named by
 * TABWIRE_CONFIG_FILE or as an environment variable TABWIRE_<KEY_IN_SCREAMING_SNAKE_CASE>
 * (environment wins). See docs/configuration.md.
 */
export const ConfigSchema = Type.Object(
  {
    host: Type.String({ default: '127.0.0.1', minLength: 1 }),
    port: Type.Integer({ default: 8080, minimum: 0, maximum: 65535 }),
    /** Public base URL the service is reached at; signUrl and cookies derive from it. Default: http://host:port. */
    publicBaseUrl: Type.Optional(Type.String({ pattern: '^https?://[^/?#]+$' })),
    /** SQLite database file of the embedded profile. */
    sqliteFile: Type.String({ default: './data/tabwire.sqlite', minLength: 1 }),
    /**
     * Cluster mode: a PostgreSQL URL (`postgres://user@host:port/db`). When set, the store is PostgreSQL
     * and `sqliteFile` is ignored; every node of a cluster names the same database (docs/deployment.md).
     */
    databaseUrl: Type.Optional(Type.String({ pattern: '^postgres(ql)?://' })),
    /** Cluster mode: PostgreSQL connections one node keeps at most (docs/store.md "Pool size"). */
    databasePoolSize: Type.Integer({ default: 10, minimum: 1, maximum: 1000 }),
    /**
     * Cluster mode: send statements as named prepared statements (docs/store.md "Prepared statements"). Off
     * only for a connection pooler in transaction mode that does not keep them (PgBouncer before 1.21).
     */
    databasePreparedStatements: Type.Boolean({ default: true }),
    /**
     * Cluster mode: a Redis URL (`redis://host:port/db`). When set, the event bus, the per-tab event streams,
     * tab presence, XMPP event handlers, rate limits and leases are shared through it (docs/deployment.md).
     */
    redisUrl: Type.Optional(Type.String({ pattern: '^rediss?://' })),
    /**
     * Cluster mode beyond one Redis core: the seed nodes (`redis://host:port`) of a Redis Cluster (7.0 or later)
     * that then carries the per-tab event streams, the tabs' presence and the event announcements, the Redis
     * load that grows with the waiting tabs; everything else stays on `redisUrl` (docs/redis.md "Redis Cluster").
     */
    redisClusterUrls: Type.Optional(Type.Array(Type.String({ pattern: '^rediss?://[^/?#]+/?$' }), { minItems: 1, maxItems: 64 })),
    /** Put before every Redis key and channel of this deployment, so several can share one Redis (docs/redis.md). */
    redisKeyPrefix: Type.String({ default: 'tabwire:', pattern: '^[A-Za-z0-9_.:-]{0,64}$' }),
    /** Further origins whose pages may use the service; the origin of publicBaseUrl is always allowed. No wildcards. */
    allowedOrigins: Type.Optional(Type.Array(Type.String({ pattern: '^https?://[^/?#]+$' }))),
    /** The OpenID Provider at `{publicBaseUrl}/oidc` (docs/oidc.md); it serves no one until the operator registers a client. */
    oidc: Type.Boolean({ default: true }),
    /**
     * How long a browser stays logged in at the OpenID Provider after a QR approval: within it, the same
     * relying party logs it in again without a scan unless it asks with `prompt=login` or `max_age` (docs/oidc.md).
     */
    oidcSessionSeconds: Type.Integer({ default: 3600, minimum: 60, maximum: 2_592_000 }),
    /** Validity of a QR login code (docs/signing.md: 5 minutes). */
    codeValiditySeconds: Type.Integer({ default: 300, minimum: 5, maximum: 3600 }),
    /**
     * Scan freshness (docs/relay.md): a signing app must fetch a code within this many seconds of its issue,
     * and the first fetch binds it to that app. 0: off (codes behave as without it). A QR request may tighten it.
     */
    codeScanSeconds: Type.Integer({ default: 0, minimum: 0, maximum: 3600 }),
    /** Pixels per QR module in PNG images. */
    qrModulePixels: Type.Integer({ default: 6, minimum: 1, maximum: 32 }),
    /** Under load, make `text` and `base64` QR answers ahead on a thread of their own (docs/signing.md "Encoder thread"). */
    qrEncoderThread: Type.Boolean({ default: true }),
    /**
     * Derive each QR refresh's code from the request stored once, without a write (docs/signing.md "Derived
     * codes"); off: every code is random and stored as it is issued, and `qrEncoderThread` makes answers ahead.
     */
    qrDerivedCodes: Type.Boolean({ default: true }),
    /** Largest accepted request body, in bytes. */
    bodyLimitBytes: Type.Integer({ default: 16_384, minimum: 1024, maximum: 10_485_760 }),
    /** SameSite attribute of the session cookie; `none` requires an https publicBaseUrl. */
    cookieSameSite: Type.Union([Type.Literal('lax'), Type.Literal('strict'), Type.Literal('none')], { default: 'lax' }),
    /** Domain part of identity ids ("legal IDs"); default: host name of publicBaseUrl. */
    legalDomain: Type.Optional(Type.String({ minLength: 1 })),
    /** How long a tab without a connection is kept before it is forgotten. */
    tabIdleSeconds: Type.Integer({ default: 60, minimum: 5, maximum: 3600 }),
    /** Close a WebSocket that has sent no frame for this long (3 missed 10 s pings). */
    pingTimeoutSeconds: Type.Integer({ default: 30, minimum: 5, maximum: 600 }),
    /** How long a long-poll is held before it is answered with a NOP (the reference client expects ~20 s). */
    longPollHoldSeconds: Type.Integer({ default: 20, minimum: 1, maximum: 60 }),
    /** Events kept per tab while it is between connections: at most this many... */
    outboxLimit: Type.Integer({ default: 100, minimum: 1, maximum: 10_000 }),
    /** ...and none older than this. */
    outboxMaxAgeSeconds: Type.Integer({ default: 60, minimum: 1, maximum: 3600 }),
    /** Tabs one session (one browser) may hold at once; more Registers are refused until idle ones are let go. */
    tabsPerSession: Type.Integer({ default: 100, minimum: 1, maximum: 100_000 }),
    /** Event handlers (RegisterEventHandler selectors) one tab may carry. */
    handlersPerTab: Type.Integer({ default: 32, minimum: 1, maximum: 10_000 }),
    /**
     * An XMPP message written to a tab counts as delivered once the tab confirms it (a WebSocket pong, the
     * next poll); unconfirmed after this long, the connection is declared dead and the message stored.
     */
    messageConfirmSeconds: Type.Integer({ default: 10, minimum: 1, maximum: 120 }),
    /** A tab binding no live connection has refreshed for this long (left by a stopped process) is deleted. */
    tabBindingRetentionSeconds: Type.Integer({ default: 600, minimum: 120, maximum: 86_400 }),
    /**
     * The id pages are told in `CheckServerInstance` after Register; they reload when it changes. Default:
     * a new random id at every start. Several nodes of one deployment set the same value per generation.
     */
    instanceId: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9_.-]{1,64}$' })),
    /** PEM certificate chain and key files: when both are set the service serves HTTPS itself. */
    tlsCertFile: Type.Optional(Type.String({ minLength: 1 })),
    tlsKeyFile: Type.Optional(Type.String({ minLength: 1 })),
    /** Trust X-Forwarded-* from a reverse proxy in front (client address and protocol in logs). */
    trustProxy: Type.Boolean({ default: false }),
    /**
     * Compatibility switch for older pages that cannot send credentials cross-site: accept QR requests
     * for a registered tab without the session cookie when they come from an allowed Origin. Risk: anyone
     * who learns a tab ID can start a login in that tab (login CSRF). Off by default (docs/events.md).
     */
    allowCookielessQrRequests: Type.Boolean({ default: false }),
    /**
     * Same-device approval with a development identity held by the service (demo page). `auto`: on
     * only when publicBaseUrl is a loopback address, so a public deployment never has it by accident.
     */
    devApproval: Type.Union([Type.Literal('auto'), Type.Literal('on'), Type.Literal('off')], { default: 'auto' }),
    /** Let anyone create agent accounts; otherwise /Agent/Account/Create needs an operator API key. */
    openRegistration: Type.Boolean({ default: false }),
    /** Approve identities applied for through the Agent API at once (development only; else an operator approves). */
    autoApproveIdentities: Type.Boolean({ default: false }),
    /** Validity of identities applied for through the Agent API. */
    identityValidDays: Type.Integer({ default: 365, minimum: 1, maximum: 3650 }),
    /** How long after a signature the requesting page may fetch the result's attachments. */
    attachmentUrlSeconds: Type.Integer({ default: 300, minimum: 10, maximum: 3600 }),
    /** Validity of a backend registration (docs/backend.md: 5 minutes; renewal restarts it). */
    serviceValiditySeconds: Type.Integer({ default: 300, minimum: 10, maximum: 86_400 }),
    /** Development flag: callbacks over plain http, to loopback addresses only. */
    callbackAllowHttpLoopback: Type.Boolean({ default: false }),
    /** Host names or IP literals callbacks may reach although they are not public (internal backends). */
    callbackAllowedHosts: Type.Array(Type.String({ minLength: 1 }), { default: [] }),
    /** Extra CA certificates (PEM file) trusted for callback TLS, e.g. a private CA. */
    callbackCaFile: Type.Optional(Type.String({ minLength: 1 })),
    /** How long after the signature a callback is retried (default: a code's 5 minutes). */
    callbackRetrySeconds: Type.Integer({ default: 300, minimum: 1, maximum: 86_400 }),
    callbackRetryBaseMs: Type.Integer({ default: 1000, minimum: 1, maximum: 60_000 }),
    callbackRetryCapMs: Type.Integer({ default: 60_000, minimum: 1, maximum: 3_600_000 }),
    callbackConnectTimeoutMs: Type.Integer({ default: 5000, minimum: 100, maximum: 60_000 }),
    callbackTimeoutMs: Type.Integer({ default: 10_000, minimum: 100, maximum: 120_000 }),
    /** How often the outbox looks for due callbacks (new ones are tried at once). */
    callbackPollMs: Type.Integer({ default: 1000, minimum: 10, maximum: 60_000 }),
    /** XEP-0114 component listener of the XMPP server, e.g. `xmpp://127.0.0.1:5347`; unset: local routing only. */
    xmppService: Type.Optional(Type.String({ pattern: '^xmpp://[^/]+$' })),
    /** The component's domain; agent accounts are `user@<this>`. Default: `agents.<legalDomain>`. */
    xmppComponentDomain: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    /** The shared secret of the component (Prosody `component_secret`). */
    xmppComponentSecret: Type.Optional(Type.String({ minLength: 1 })),
    /** Messages one agent account may hold for PopMessages before new ones are refused. */
    messageQuotaPerAccount: Type.Integer({ default: 1000, minimum: 1, maximum: 1_000_000 }),
    // Limits and retention (docs/configuration.md "Limits" explains the defaults).
    /** QR requests per session cookie per minute (a tab refreshing its code every 2 s makes 30). */
    qrRequestsPerSessionPerMinute: Type.Integer({ default: 300, minimum: 1, maximum: 1_000_000 }),
    /** QR requests per client address per minute (many people may share one NAT address). */
    qrRequestsPerAddressPerMinute: Type.Integer({ default: 6000, minimum: 1, maximum: 10_000_000 }),
    /** Cluster: how often each node syncs its QR request counts with Redis (docs/redis.md "Limits"). */
    rateLimitSyncMs: Type.Integer({ default: 1000, minimum: 10, maximum: 60_000 }),
    /** Backend registrations and renewals per client address per minute. */
    registrationsPerAddressPerMinute: Type.Integer({ default: 300, minimum: 1, maximum: 1_000_000 }),
    /** Requests to the OpenID Provider's token endpoint per client address per minute (docs/oidc.md "Limits"). */
    oidcTokenRequestsPerAddressPerMinute: Type.Integer({ default: 600, minimum: 1, maximum: 1_000_000 }),
    /** Login attempts per user name in one throttle window before 429 (a success resets the count). */
    loginAttemptsPerAccount: Type.Integer({ default: 5, minimum: 1, maximum: 1000 }),
    /** Failed login attempts per client address in one throttle window before 429. */
    loginAttemptsPerAddress: Type.Integer({ default: 50, minimum: 1, maximum: 100_000 }),
    loginThrottleWindowSeconds: Type.Integer({ default: 60, minimum: 1, maximum: 86_400 }),
    /** Identities one agent account may hold (any state); ApplyId beyond it is refused with 507. */
    identitiesPerAccount: Type.Integer({ default: 20, minimum: 1, maximum: 100_000 }),
    /** Largest (and default) page of ListIdentities. */
    identityPageSize: Type.Integer({ default: 20, minimum: 1, maximum: 1000 }),
    /** How often the retention purge runs. */
    purgeIntervalSeconds: Type.Integer({ default: 60, minimum: 1, maximum: 86_400 }),
    /** Expired login codes are kept this long after expiry (at least attachmentUrlSeconds). */
    codeRetentionSeconds: Type.Integer({ default: 300, minimum: 0, maximum: 604_800 }),
    /** Expired backend registrations are kept this long after expiry (at least codeValiditySeconds). */
    registrationRetentionSeconds: Type.Integer({ default: 300, minimum: 0, maximum: 604_800 }),
    /** Callbacks (delivered, given up or abandoned) are kept this long after their retry window ends. */
    callbackRetentionSeconds: Type.Integer({ default: 600, minimum: 0, maximum: 2_592_000 }),
    /** A request must arrive whole (headers and body) within this time, else 408 and the connection closes. */
    requestTimeoutSeconds: Type.Integer({ default: 60, minimum: 1, maximum: 3600 }),
    /** The request headers must arrive within this time (never more than requestTimeoutSeconds). */
    headersTimeoutSeconds: Type.Integer({ default: 15, minimum: 1, maximum: 3600 }),
    /** Shutdown waits this long for requests in progress, then cuts the remaining connections. */
    shutdownTimeoutSeconds: Type.Integer({ default: 10, minimum: 1, maximum: 600 }),
    /** On SIGTERM/SIGINT, /readyz answers 503 for this long before the node stops taking work (0: at once). */
    shutdownDrainSeconds: Type.Integer({ default: 0, minimum: 0, maximum: 300 }),
    logLevel: Type.Union(
      ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((l) => Type.Literal(l)),
      { default: 'info' },
    ),
    /** `auto`: human-readable lines when stdout is a terminal, JSON lines otherwise; `pretty` or `json` force one (docs/configuration.md "Logs"). */
    logFormat: Type.Union([Type.Literal('auto'), Type.Literal('pretty'), Type.Literal('json')], { default: 'auto' }),
  },
  { additionalProperties: false },
);

export type ConfigInput = Static<typeof ConfigSchema>;

/** Validated, frozen configuration with every derived default filled in. */
export type Config = Readonly<
  Omit<ConfigInput, 'publicBaseUrl' | 'allowedOrigins' | 'legalDomain' | 'xmppComponentDomain'> & {
    publicBaseUrl: string;
    allowedOrigins: readonly string[];
    legalDomain: string;
    /** `devApproval` resolved against publicBaseUrl. */
    devApprovalEnabled: boolean;
    xmppComponentDomain: string;
  }
>;
