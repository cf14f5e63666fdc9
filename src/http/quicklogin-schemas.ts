import { Type } from '@sinclair/typebox';
import { ATTACHMENT_TYPES } from '../identity/application.js';
import { QR_MODES } from '../quicklogin/quicklogin.js';
import { binary, JSON_BODY, json, media, problems } from './openapi-schemas.js';
import { anyText, humanText } from './schema-text.js';

/**
 * Schemas of the QuickLogin routes (docs/signing.md, docs/backend.md): the two kinds of `POST /QuickLogin`
 * body, which the handler tells apart and validates itself, and every route's answers for the OpenAPI
 * document (docs/openapi.md).
 */

// docs/signing.md: the first four fields are required (serviceId and tab may be empty).
export const QrRequestBody = Type.Object(
  {
    mode: Type.Union(QR_MODES.map((m) => Type.Literal(m))),
    // Shown to the person who signs (docs/signing.md): one line of text.
    purpose: humanText({ minLength: 1, maxLength: 1024 }),
    serviceId: anyText({ maxLength: 128, description: 'Required; "" unless in backend mode' }),
    tab: Type.String({ maxLength: 64, pattern: '^([A-Za-z0-9_-]{8,64})?$', description: 'Required; the tab that gets the result, or ""' }),
    agentApiTimeout: Type.Optional(Type.Number({ exclusiveMinimum: 0 })),
    propertyFilter: Type.Optional(anyText({ maxLength: 1024 })),
    attachmentFilter: Type.Optional(anyText({ maxLength: 1024 })),
    // docs/relay.md: tightens the deployment's codeScanSeconds for this code, never loosens it.
    scanSeconds: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 3600,
        description: 'A signing app must fetch the code within this many seconds of issue, and the first fetch binds it (docs/relay.md); the smaller of this and codeScanSeconds applies',
      }),
    ),
  },
  { title: 'QrRequest' },
);

// docs/backend.md.
export const RegistrationBody = Type.Object(
  {
    service: anyText({ minLength: 1, maxLength: 2048, description: 'The callback URL' }),
    sessionId: anyText({ minLength: 1, maxLength: 256 }),
    serviceId: Type.Optional(anyText({ minLength: 1, maxLength: 128 })),
    // Additive: a Standard Webhooks symmetric secret the backend chose; callbacks then carry a `v1` signature too.
    webhookSecret: Type.Optional(Type.String({ pattern: '^whsec_[A-Za-z0-9+/]{32,256}={0,2}$' })),
  },
  { title: 'BackendRegistration' },
);

const side = Type.Integer({ minimum: 1 });
const QrAnswer = Type.Union([
  Type.Object({ signUrl: Type.String(), src: Type.String(), width: side, height: side }, { title: 'QrImage', description: 'mode image' }),
  Type.Object(
    { signUrl: Type.String(), base64: Type.String(), contentType: Type.Literal('image/png'), width: side, height: side },
    { title: 'QrBase64', description: 'mode base64' },
  ),
  Type.Object({ signUrl: Type.String(), text: Type.String() }, { title: 'QrText', description: 'mode text' }),
  Type.Object({ serviceId: Type.String() }, { title: 'BackendRegistered', description: 'A backend registration' }),
]);

export const TAB_REFUSALS = ['origin_not_allowed', 'session_missing', 'tab_not_registered', 'tab_session_mismatch', 'tab_limit_reached'] as const;
const REGISTRATION_REFUSALS = ['callback_url_refused', 'service_not_registered', 'service_expired', 'service_mismatch'] as const;
const CODE_REFUSALS = ['code_not_found', 'code_already_used', 'code_expired'] as const;
// Scan-limited codes (docs/relay.md): a fetch too late, a fetch of a code another app holds, a signature without the token.
const FETCH_REFUSALS = [...CODE_REFUSALS, 'code_too_old', 'code_bound'] as const;

/** The binding token of a scan-limited code, on later fetches and on the signature (docs/relay.md). */
const bindingHeader = Type.Object({
  'tabwire-binding': Type.Optional(
    Type.String({
      pattern: '^[A-Za-z0-9_-]{22}$',
      description: 'The binding token the first fetch of a scan-limited code returned (docs/relay.md); ignored for other codes',
    }),
  ),
});

export const quickLoginSchema = {
  tags: ['QuickLogin'],
  summary: 'Request a QR login code for a tab, or register a backend',
  description: 'Which request a body is follows from its fields (docs/agent-api.md). Both answers are `Cache-Control: no-store`.',
  body: Type.Object({}, { additionalProperties: true }),
  response: {
    200: json(QrAnswer, 'The code in the mode asked, or the registration'),
    ...problems(JSON_BODY, 'request_kind_ambiguous', 'rate_limited', TAB_REFUSALS, REGISTRATION_REFUSALS),
  },
};
// The handler tells the two kinds apart (so a mix is `request_kind_ambiguous`); the document shows both.
export const quickLoginBodyDocumented = { body: Type.Union([QrRequestBody, RegistrationBody]) };

export const qrImageSchema = {
  tags: ['QuickLogin'],
  summary: 'The PNG of a valid code (`src` of mode image)',
  description: 'Colours as `?fg=…&bg=…` or appended to the path after `.png` (docs/signing.md "QR images").',
  // `<code>.png`, optionally followed by `&name=value...`; only the code is validated.
  params: Type.Object({ file: Type.String({ pattern: '^[A-Za-z0-9_-]{1,64}\\.png(?:&[\\s\\S]*)?$' }) }),
  response: { 200: media('image/png', 'The QR code', binary()), ...problems('validation_failed', 'not_found') },
};

export const codeParam = Type.Object({ code: Type.String({ pattern: '^[A-Za-z0-9_-]{1,64}$' }) });

const SignInfo = Type.Object({
  code: Type.String(),
  purpose: Type.String(),
  origin: Type.Union([Type.String(), Type.Null()]),
  requester: Type.Union([Type.String(), Type.Null()]),
  expires: Type.Integer({ description: 'Unix seconds' }),
  challenge: Type.String({ description: 'What the signer signs (docs/signing.md "The canonical challenge")' }),
  propertyFilter: Type.Union([Type.String(), Type.Null()]),
  attachmentFilter: Type.Union([Type.String(), Type.Null()]),
  binding: Type.Optional(
    Type.String({
      description: 'Scan-limited codes only (docs/relay.md): the binding token; send it as the Tabwire-Binding header on later fetches and on the signature',
    }),
  ),
});

export const signInfoSchema = {
  tags: ['QuickLogin'],
  summary: 'What a signing app shows and signs (JSON), or the approval page (when Accept prefers text/html)',
  description: 'A scan-limited code (docs/relay.md) is bound by its first JSON fetch, which gets `binding`; a later fetch must present it.',
  params: codeParam,
  headers: bindingHeader,
  response: {
    200: {
      description: 'The code\'s sign info, or the page',
      content: { 'application/json': { schema: SignInfo }, 'text/html': { schema: Type.String() } },
    },
    ...problems('validation_failed', FETCH_REFUSALS),
  },
};

const decision = Type.Union([Type.Literal('approve'), Type.Literal('reject')]);
const signedAnswer = json(Type.Object({ state: Type.Union([Type.Literal('approved'), Type.Literal('rejected')]) }), 'The code is settled');
const SIGN_REFUSALS = [...CODE_REFUSALS, 'identity_not_found', 'identity_not_approved', 'identity_key_refused', 'signature_invalid', 'service_not_registered', 'binding_required'] as const;

export const devApprovalSchema = {
  tags: ['QuickLogin'],
  summary: 'Same-device approval with the development identity (config devApproval)',
  params: codeParam,
  headers: bindingHeader,
  body: Type.Object({ decision }),
  response: { 200: signedAnswer, ...problems(JSON_BODY, 'not_found', 'origin_not_allowed', SIGN_REFUSALS) },
};

export const devIdentitySchema = {
  tags: ['QuickLogin'],
  summary: 'The development identity the approval page signs with, so the page can name it (404 when devApproval is off)',
  response: {
    200: Type.Object({ legalId: Type.String(), properties: Type.Record(Type.String(), Type.String()) }, { additionalProperties: false }),
    ...problems('not_found'),
  },
};

export const signSchema = {
  tags: ['QuickLogin'],
  summary: 'Approve or reject a code with a signature (docs/signing.md)',
  params: codeParam,
  headers: bindingHeader,
  body: Type.Object({
    legalId: anyText({ minLength: 1, maxLength: 255 }),
    signature: Type.String({ minLength: 1, maxLength: 256, pattern: '^[A-Za-z0-9+/]+={0,2}$' }),
    decision,
  }),
  response: { 200: signedAnswer, ...problems(JSON_BODY, SIGN_REFUSALS) },
};

export const attachmentSchema = {
  tags: ['QuickLogin'],
  summary: 'An attachment of a fresh result, for the session that asked (docs/agent-api.md "Attachments")',
  params: Type.Object({ code: Type.String({ pattern: '^[A-Za-z0-9_-]{1,64}$' }), id: Type.String({ pattern: '^[A-Za-z0-9-]{1,64}$' }) }),
  response: {
    200: {
      description: 'The file, as `Content-Disposition: attachment`',
      content: Object.fromEntries(ATTACHMENT_TYPES.map((t) => [t, { schema: binary() }])),
    },
    ...problems('validation_failed', 'not_found'),
  },
};

const Ed25519Jwk = Type.Object({
  kty: Type.Literal('OKP'),
  crv: Type.Literal('Ed25519'),
  x: Type.String(),
  kid: Type.String(),
  alg: Type.Literal('EdDSA'),
  use: Type.Literal('sig'),
});

export const resultKeysSchema = {
  tags: ['Keys'],
  summary: 'The keys that verify ServerSignature in results, newest first (JWK, RFC 8037)',
  response: { 200: json(Type.Object({ keys: Type.Array(Ed25519Jwk) }), 'The key ring'), ...problems() },
};

export const webhookKeySchema = {
  tags: ['Keys'],
  summary: 'The key that verifies backend callbacks (Standard Webhooks v1a, docs/backend.md)',
  response: { 200: json(Type.Object({ key: Type.String({ pattern: '^whpk_' }), jwk: Ed25519Jwk }), 'The key'), ...problems() },
};
