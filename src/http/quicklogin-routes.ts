import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { TabwireError } from '../errors.js';
import { SerializedJson, type QuickLogin } from '../quicklogin/quicklogin.js';
import { resolvePalette } from '../quicklogin/qr-colours.js';
import type { ServerSigner } from '../quicklogin/server-signer.js';
import type { BackendRegistrations } from '../callbacks/registrations.js';
import { BINDING_HEADER } from '../quicklogin/binding.js';
import { approveWithDevIdentity } from '../quicklogin/dev-approval.js';
import { DEV_PROPERTIES, type DevIdentity } from '../identity/dev-identity.js';
import { readPage, sendPage } from './pages-routes.js';
import { checkOrigin } from './origin.js';
import { hashSession, sessionIdOf } from './session.js';
import { documentAs } from './openapi-schemas.js';
import {
  attachmentSchema,
  devApprovalSchema,
  devIdentitySchema,
  qrImageSchema,
  QrRequestBody,
  quickLoginBodyDocumented,
  quickLoginSchema,
  RegistrationBody,
  resultKeysSchema,
  signInfoSchema,
  signSchema,
  webhookKeySchema,
} from './quicklogin-schemas.js';
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

const validateQrRequest = compileValidator(QrRequestBody);
const validateRegistration = compileValidator(RegistrationBody);

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

/** `POST /QuickLogin`, the QR image, and the signing protocol (docs/signing.md). */
export async function quickLoginRoutes(fastify: FastifyInstance, o: QuickLoginRoutesOptions): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  app.post('/QuickLogin', { schema: quickLoginSchema, config: documentAs(quickLoginBodyDocumented) }, async (request, reply) => {
    const body: Record<string, unknown> = request.body;
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
    reply.header('cache-control', 'no-store');
    // Already JSON (text mode): sent as it is, past the response serialiser.
    if (response instanceof SerializedJson) return reply.type('application/json; charset=utf-8').send(response.bytes);
    return reply.send(response);
  });

  app.get(
    '/QuickLogin/Qr/:file',
    // `<code>.png`, optionally followed by `&name=value...` (docs/signing.md "QR images"); only the code is validated.
    { schema: qrImageSchema },
    async (request, reply) => {
      const { file } = request.params;
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
  app.get('/QuickLogin/Sign/:code', { schema: signInfoSchema }, async (request, reply) => {
    // The page itself shows nothing from the request; its script fetches this same URL as JSON.
    if (prefersHtml(request.headers.accept)) return sendPage(reply, signPage);
    const { code } = request.params;
    // Fastify answers HEAD with this handler. HEAD is safe (RFC 9110 §9.2.1) and its body is never sent,
    // so it must not bind the code: it only reads the code (404, 409 used, 410 expired, as a GET would).
    if (request.method === 'HEAD') return reply.header('cache-control', 'no-store').send(await o.quickLogin.peek(code));
    return reply.header('cache-control', 'no-store').send(await o.quickLogin.describe(code, request.headers[BINDING_HEADER]));
  });

  // Which identity the approval page signs with, so the page can name it (404 when development approval is off).
  app.get(
    '/QuickLogin/DevIdentity',
    { schema: devIdentitySchema },
    async (_request, reply) => {
      if (!o.devIdentity) throw new TabwireError('not_found', 'Development approval is not enabled on this service');
      return reply.header('cache-control', 'no-store').send({ legalId: o.devIdentity.legalId, properties: { ...DEV_PROPERTIES } });
    },
  );

  // Same-device approval with the development identity (config devApproval; loopback deployments only by default).
  app.post(
    '/QuickLogin/Sign/:code/Dev',
    { schema: devApprovalSchema },
    async (request) => {
      if (!o.devIdentity) throw new TabwireError('not_found', 'Development approval is not enabled on this service');
      checkOrigin(request, o.allowedOrigins);
      return approveWithDevIdentity(o.quickLogin, o.devIdentity, request.params.code, request.body.decision, request.headers[BINDING_HEADER]);
    },
  );

  app.post('/QuickLogin/Sign/:code', { schema: signSchema }, async (request) =>
    o.quickLogin.sign(request.params.code, request.body, request.headers[BINDING_HEADER]),
  );

  // Attachments of a fresh result, for the page (session) that asked only (docs/agent-api.md "Attachments").
  app.get(
    '/QuickLogin/Attachment/:code/:id',
    { schema: attachmentSchema },
    async (request, reply) => {
      const { code, id } = request.params;
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
  app.get('/.well-known/tabwire/result-keys', { schema: resultKeysSchema }, async () => ({ keys: await o.signer.ringJwks() }));
  // The key that verifies backend callbacks (Standard Webhooks v1a; docs/backend.md). The same Ed25519 key.
  app.get('/.well-known/tabwire/webhook-key', { schema: webhookKeySchema }, async () => ({ key: `whpk_${o.signer.publicKeyBase64}`, jwk: o.signer.publicJwk() }));
}
