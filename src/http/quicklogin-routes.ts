import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { TabwireError } from '../errors.js';
import { QR_MODES, type QuickLogin } from '../quicklogin/quicklogin.js';
import { resolvePalette } from '../quicklogin/qr-colours.js';
import type { ServerSigner } from '../quicklogin/server-signer.js';
import type { BackendRegistrations } from '../callbacks/registrations.js';
import { approveWithDevIdentity } from '../quicklogin/dev-approval.js';
import { DEV_PROPERTIES, type DevIdentity } from '../identity/dev-identity.js';
import { readPage, sendPage } from './pages-routes.js';
import { checkOrigin } from './origin.js';
import { hashSession, sessionIdOf } from './session.js';
import { anyText, humanText } from './schema-text.js';
import { compileValidator } from './validate.js';
import type { RequestLimits } from './request-limits.js';

export interface QuickLoginRoutesOptions {
  quickLogin: QuickLogin;
  signer: ServerSigner;
  registrations: BackendRegistrations;
  allowedOrigins: readonly string[];
  /** Present when same-device approval with the development identity is enabled. */
  devIdentity: DevIdentity | undefined;
  /** How long after the signature the requesting page may fetch the result's attachments. */
  attachmentFreshMs: number;
  /** Rate limits of QR requests and backend registrations (docs/configuration.md "Limits"). */
  limits: RequestLimits;
}

/** A browser opening the signUrl wants the approval page; signing apps ask for JSON. */
function prefersHtml(accept: string | undefined): boolean {
  if (accept === undefined) return false;
  const html = accept.indexOf('text/html');
  const json = accept.indexOf('application/json');
  return html !== -1 && (json === -1 || html < json);
}

// docs/signing.md: the first four fields are required (serviceId and tab may be empty).
const validateQrRequest = compileValidator(
  Type.Object({
    mode: Type.Union(QR_MODES.map((m) => Type.Literal(m))),
    // Shown to the person who signs (docs/signing.md): one line of text.
    purpose: humanText({ minLength: 1, maxLength: 1024 }),
    serviceId: anyText({ maxLength: 128 }),
    tab: Type.String({ maxLength: 64, pattern: '^([A-Za-z0-9_-]{8,64})?$' }),
    agentApiTimeout: Type.Optional(Type.Number({ exclusiveMinimum: 0 })),
    propertyFilter: Type.Optional(anyText({ maxLength: 1024 })),
    attachmentFilter: Type.Optional(anyText({ maxLength: 1024 })),
  }),
);

// docs/backend.md.
const validateRegistration = compileValidator(
  Type.Object({
    service: anyText({ minLength: 1, maxLength: 2048 }),
    sessionId: anyText({ minLength: 1, maxLength: 256 }),
    serviceId: Type.Optional(anyText({ minLength: 1, maxLength: 128 })),
    // Additive: a Standard Webhooks symmetric secret the backend chose; callbacks then carry a `v1` signature too.
    webhookSecret: Type.Optional(Type.String({ pattern: '^whsec_[A-Za-z0-9+/]{32,256}={0,2}$' })),
  }),
);

const QR_FIELDS = ['mode', 'purpose', 'tab'] as const;
const REGISTRATION_FIELDS = ['service', 'sessionId'] as const;

/** docs/agent-api.md: which request a body is follows from the fields present. */
function kindOf(body: Record<string, unknown>): 'qr' | 'registration' {
  const qr = QR_FIELDS.filter((f) => f in body);
  const registration = REGISTRATION_FIELDS.filter((f) => f in body);
  if (qr.length > 0 && registration.length > 0) {
    throw new TabwireError(
      'request_kind_ambiguous',
      `The body mixes QR request fields (${qr.join(', ')}) with backend registration fields (${registration.join(', ')})`,
    );
  }
  if (qr.length === 0 && registration.length === 0) {
    throw new TabwireError(
      'request_kind_ambiguous',
      'Send either a QR request (mode, purpose, serviceId, tab) or a backend registration (service, sessionId[, serviceId])',
    );
  }
  return qr.length > 0 ? 'qr' : 'registration';
}

/** The last value of a query parameter (a repeated one arrives as an array), when it is a string. */
function lastOf(value: unknown): string | undefined {
  const last: unknown = Array.isArray(value) ? value[value.length - 1] : value;
  return typeof last === 'string' ? last : undefined;
}

/**
 * The code and the colour parameters of a QR image request. A page script appends the literal
 * `&fg=Theme&bg=Theme` to `src`, which has no query string, so parameters arrive after `.png` in the
 * path or in the query (`?fg=…&bg=…`); both are read, the query last (it wins a repeated name).
 */
export function qrImageParams(file: string, query: unknown): { code: string; fg: string | undefined; bg: string | undefined } {
  const dot = file.indexOf('.png');
  const params = new URLSearchParams(file.slice(dot + '.png'.length));
  const q = (query ?? {}) as Record<string, unknown>;
  return {
    code: file.slice(0, dot),
    fg: lastOf(q.fg) ?? params.getAll('fg').at(-1),
    bg: lastOf(q.bg) ?? params.getAll('bg').at(-1),
  };
}

const codeParam = Type.Object({ code: Type.String({ pattern: '^[A-Za-z0-9_-]{1,64}$' }) });

/** `POST /QuickLogin`, the QR image, and the signing protocol (docs/signing.md). */
export async function quickLoginRoutes(app: FastifyInstance, o: QuickLoginRoutesOptions): Promise<void> {
  app.post('/QuickLogin', { schema: { body: Type.Object({}, { additionalProperties: true }) } }, async (request, reply) => {
    const body = request.body as Record<string, unknown>;
    if (kindOf(body) === 'registration') {
      await o.limits.registration(request);
      // Server-to-server: no session and no Origin needed; the callback URL policy guards it.
      return reply.header('cache-control', 'no-store').send(await o.registrations.register(validateRegistration(body)));
    }
    const qrRequest = validateQrRequest(body);
    const origin = checkOrigin(request, o.allowedOrigins);
    const sessionId = sessionIdOf(request);
    const sessionHash = sessionId === undefined ? null : hashSession(sessionId);
    // Each QR request stores a code: counted per session and per address before anything is stored.
    await o.limits.qr(request, sessionHash);
    const response = await o.quickLogin.requestQr(qrRequest, { origin, sessionHash });
    return reply.header('cache-control', 'no-store').send(response);
  });

  app.get(
    '/QuickLogin/Qr/:file',
    // `<code>.png`, optionally followed by `&name=value...` (docs/signing.md "QR images"); only the code is validated.
    { schema: { params: Type.Object({ file: Type.String({ pattern: '^[A-Za-z0-9_-]{1,64}\\.png(?:&[\\s\\S]*)?$' }) }) } },
    async (request, reply) => {
      const { file } = request.params as { file: string };
      const { code, fg, bg } = qrImageParams(file, request.query);
      const image = await o.quickLogin.qrPng(code, resolvePalette(fg, bg));
      if (!image) throw new TabwireError('not_found', 'No valid login code has this image');
      return reply
        .type('image/png')
        .header('cache-control', `private, max-age=${image.maxAgeSeconds}`)
        .send(image.png);
    },
  );

  const signPage = readPage('sign.html');
  app.get('/QuickLogin/Sign/:code', { schema: { params: codeParam } }, async (request, reply) => {
    // The page itself shows nothing from the request; its script fetches this same URL as JSON.
    if (prefersHtml(request.headers.accept)) return sendPage(reply, signPage);
    const { code } = request.params as { code: string };
    return reply.header('cache-control', 'no-store').send(await o.quickLogin.describe(code));
  });

  // Which identity the approval page signs with, so the page can name it (404 when development approval is off).
  app.get(
    '/QuickLogin/DevIdentity',
    {
      schema: {
        response: {
          200: Type.Object({ legalId: Type.String(), properties: Type.Record(Type.String(), Type.String()) }, { additionalProperties: false }),
        },
      },
    },
    async (_request, reply) => {
      if (!o.devIdentity) throw new TabwireError('not_found', 'Development approval is not enabled on this service');
      return reply.header('cache-control', 'no-store').send({ legalId: o.devIdentity.legalId, properties: { ...DEV_PROPERTIES } });
    },
  );

  // Same-device approval with the development identity (config devApproval; loopback deployments only by default).
  app.post(
    '/QuickLogin/Sign/:code/Dev',
    { schema: { params: codeParam, body: Type.Object({ decision: Type.Union([Type.Literal('approve'), Type.Literal('reject')]) }) } },
    async (request) => {
      if (!o.devIdentity) throw new TabwireError('not_found', 'Development approval is not enabled on this service');
      checkOrigin(request, o.allowedOrigins);
      const { code } = request.params as { code: string };
      return approveWithDevIdentity(o.quickLogin, o.devIdentity, code, (request.body as { decision: 'approve' | 'reject' }).decision);
    },
  );

  app.post(
    '/QuickLogin/Sign/:code',
    {
      schema: {
        params: codeParam,
        body: Type.Object({
          legalId: anyText({ minLength: 1, maxLength: 255 }),
          signature: Type.String({ minLength: 1, maxLength: 256, pattern: '^[A-Za-z0-9+/]+={0,2}$' }),
          decision: Type.Union([Type.Literal('approve'), Type.Literal('reject')]),
        }),
      },
    },
    async (request) => {
      const { code } = request.params as { code: string };
      return o.quickLogin.sign(code, request.body as { legalId: string; signature: string; decision: 'approve' | 'reject' });
    },
  );

  // Attachments of a fresh result, for the page (session) that asked only (docs/agent-api.md "Attachments").
  app.get(
    '/QuickLogin/Attachment/:code/:id',
    { schema: { params: Type.Object({ code: Type.String({ pattern: '^[A-Za-z0-9_-]{1,64}$' }), id: Type.String({ pattern: '^[A-Za-z0-9-]{1,64}$' }) }) } },
    async (request, reply) => {
      const { code, id } = request.params as { code: string; id: string };
      const sessionId = sessionIdOf(request);
      const attachment = await o.quickLogin.resultAttachment(code, id, sessionId === undefined ? null : hashSession(sessionId), o.attachmentFreshMs);
      return reply
        .type(attachment.contentType)
        .header('content-disposition', `attachment; filename="${attachment.fileName.replace(/[^\x20-\x7e]|"/g, '_')}"`)
        .header('x-content-type-options', 'nosniff')
        .header('cache-control', 'private, no-store')
        .send(attachment.content);
    },
  );

  // The key that verifies ServerSignature in results (docs/signing.md).
  app.get('/.well-known/tabwire/result-keys', async () => ({ keys: await o.signer.ringJwks() }));
  // The key that verifies backend callbacks (Standard Webhooks v1a; docs/backend.md). The same Ed25519 key.
  app.get('/.well-known/tabwire/webhook-key', async () => ({ key: `whpk_${o.signer.publicKeyBase64}`, jwk: o.signer.publicJwk() }));
}
