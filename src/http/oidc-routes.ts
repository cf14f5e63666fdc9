import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type Provider from 'oidc-provider';
import type { InteractionDetails } from 'oidc-provider';
import { TabwireError } from '../errors.js';
import type { OidcLogin } from '../oidc/login.js';
import { OIDC_MOUNT } from '../oidc/provider.js';
import { SerializedJson } from '../quicklogin/qr-answer.js';
import { media, problems } from './openapi-schemas.js';
import { readPage, sendPage } from './pages-routes.js';
import { QrRequestBody, TAB_REFUSALS } from './quicklogin-schemas.js';
import type { RequestLimits } from './request-limits.js';
import { handOutSession, hashSession, sessionIdOf, type CookiePolicy } from './session.js';
import { compileValidator } from './validate.js';

/** The provider now serving (made again when its keys change) with its request handler. */
export interface ProviderHolder {
  current(): { provider: Provider; handle: (req: IncomingMessage, res: ServerResponse) => void };
}

export interface OidcRoutesOptions {
  holder: ProviderHolder;
  login: OidcLogin;
  limits: RequestLimits;
  cookies: CookiePolicy;
  /** The service's own origin: the only page that may post to the login page's routes. */
  serviceOrigin: string;
}

const tags = ['OpenID Connect'];

/**
 * The library's endpoints as configured (its default paths under the mount; dynamic registration, device flow,
 * CIBA, introspection and pushed requests are off): path and methods (docs/oidc.md "Endpoints"). The
 * authorization and logout endpoints take GET only: the library serves their POST forms only with
 * `enableHttpPostMethods`, which needs SameSite=None cookies, and answered any other POST with a bare
 * text 404; routed GET-only, a POST is the service's own 404.
 */
export const OIDC_ENDPOINTS: ReadonlyArray<readonly [string, readonly ('GET' | 'POST')[]]> = [
  ['/.well-known/openid-configuration', ['GET']],
  ['/auth', ['GET']],
  ['/auth/:uid', ['GET']],
  ['/token', ['POST']],
  ['/jwks', ['GET']],
  ['/me', ['GET', 'POST']],
  ['/token/revocation', ['POST']],
  ['/session/end', ['GET']],
  ['/session/end/confirm', ['POST']],
  ['/session/end/success', ['GET']],
];
const validateQr = compileValidator(QrRequestBody);
const UidParams = Type.Object({ uid: Type.String({ pattern: '^[A-Za-z0-9_-]{1,64}$' }) });
/** A browser navigating (Accept names text/html), rather than a program asking. */
const wantsHtml = (request: FastifyRequest): boolean => /\btext\/html\b/i.test(request.headers.accept ?? '');

/** The login page's 404: the page itself for a browser, saying the login has ended; the problem for anything else. */
const endedLogin = {
  description: 'This login has ended or belongs to another browser: the page (which shows the reason its `/view` is refused with) for a browser, `not_found` for other clients',
  content: { 'text/html': { schema: Type.String() }, ...(problems('not_found')[404] as { content: Record<string, unknown> }).content },
};

const LoginViewSchema = Type.Object(
  { clientName: Type.String(), site: Type.String(), purpose: Type.String(), scopes: Type.Array(Type.String()), claims: Type.Array(Type.String()), expires: Type.Integer() },
  { title: 'OidcLoginView' },
);
const QrAnswerSchema = Type.Object({ signUrl: Type.String() }, { additionalProperties: true, description: 'As POST /QuickLogin answers (docs/signing.md)' });
const CompleteBody = Type.Object({ tab: Type.String({ pattern: '^[A-Za-z0-9_-]{8,64}$' }) }, { title: 'OidcLoginComplete' });

/**
 * The OpenID Provider (docs/oidc.md): the library's endpoints under `/oidc` (discovery, authorization,
 * token, JWKS, userinfo, revocation, logout), and the login page of an interaction with its QR requests and
 * its completion. The library reads its own request bodies, so its routes parse none.
 */
export async function oidcRoutes(fastify: FastifyInstance, o: OidcRoutesOptions): Promise<void> {
  await fastify.register(async (scope) => {
    // Left unread for the library, which parses form and JSON bodies itself (and refuses others as the specs say).
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', (_request, _payload, done) => done(null, undefined));
    const pass = async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
      if (request.method === 'POST' && request.routeOptions.url === `${OIDC_MOUNT}/token`) await o.limits.oidcToken(request);
      const raw = request.raw as IncomingMessage & { originalUrl?: string };
      // The library finds its mount path by comparing originalUrl with url (as Express and middie leave them).
      raw.originalUrl = raw.url;
      raw.url = raw.url!.slice(OIDC_MOUNT.length) || '/';
      reply.hijack();
      o.holder.current().handle(raw, reply.raw);
    };
    // The library's endpoints, named one by one (OIDC_ENDPOINTS) so any other path under /oidc is the
    // service's own 404. Not in the OpenAPI document: the discovery document describes them.
    for (const [path, methods] of OIDC_ENDPOINTS) {
      scope.route({
        method: [...methods],
        url: `${OIDC_MOUNT}${path}`,
        // HEAD is safe (RFC 9110 §9.2.1): GET /auth creates a login's record, so no HEAD reaches the library.
        exposeHeadRoute: false,
        schema: { hide: true, tags, summary: 'OpenID Provider endpoint (docs/oidc.md); described by its discovery document' },
        handler: pass,
      });
    }
  });

  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const page = readPage('oidc-login.html');

  /** The interaction of the request's cookie, which must be the one in the path. */
  const interaction = async (request: FastifyRequest, reply: FastifyReply, uid: string): Promise<InteractionDetails> => {
    let details: InteractionDetails;
    try {
      details = await o.holder.current().provider.interactionDetails(request.raw, reply.raw);
    } catch {
      throw new TabwireError('not_found', 'This login has ended or belongs to another browser; go back to the site and start again');
    }
    if (details.uid !== uid) throw new TabwireError('not_found', 'This login has ended or belongs to another browser; go back to the site and start again');
    return details;
  };
  /** A same-origin page's session: the login page's own requests only (no cross-site form can finish a login). */
  const pageSession = (request: FastifyRequest): string => {
    if (request.headers.origin !== o.serviceOrigin) throw new TabwireError('origin_not_allowed', 'Only the login page itself may ask this');
    const session = sessionIdOf(request);
    if (session === undefined) throw new TabwireError('session_missing', 'The login page sets a session cookie: load it again');
    return hashSession(session);
  };

  app.get(
    `${OIDC_MOUNT}/interaction/:uid`,
    {
      schema: {
        tags,
        summary: 'The login page of an OpenID Connect login: a QR code to approve in a signing app',
        params: UidParams,
        response: { 200: media('text/html', 'The page'), ...problems(), 404: endedLogin } },
    },
    async (request, reply) => {
      try {
        await interaction(request, reply, request.params.uid);
      } catch (error) {
        // A person reloading an ended login, or coming back to it, reads in words that it has ended (the page
        // shows the reason its /view is refused with), not a JSON document; no session is handed out for it.
        // A program that does not ask for HTML gets the problem, as from every other route.
        if (error instanceof TabwireError && error.code === 'not_found' && wantsHtml(request)) return sendPage(reply.code(404), page);
        throw error;
      }
      handOutSession(request, reply, o.cookies);
      return sendPage(reply, page);
    },
  );

  app.get(
    `${OIDC_MOUNT}/interaction/:uid/view`,
    { schema: { tags, summary: 'What the login page shows: the site, its name and the claims it asks for', params: UidParams, response: { 200: LoginViewSchema, ...problems('not_found') } } },
    async (request, reply) => {
      const details = await interaction(request, reply, request.params.uid);
      reply.header('cache-control', 'no-store');
      return o.login.view(details, await o.login.client(details));
    },
  );

  // The QuickLogin helper's request, sent here by the login page (`service` option): only mode, tab and
  // scanSeconds are taken from it; purpose, filters and the shown site come from the interaction.
  app.post(
    `${OIDC_MOUNT}/interaction/:uid/QuickLogin`,
    { schema: { tags, summary: 'A QR code for the login page, on the relying party\'s behalf', params: UidParams, body: Type.Object({}, { additionalProperties: true }), response: { 200: QrAnswerSchema, ...problems('validation_failed', 'not_found', 'rate_limited', TAB_REFUSALS) } } },
    async (request, reply) => {
      const sessionHash = pageSession(request);
      const details = await interaction(request, reply, request.params.uid);
      const body = validateQr(request.body);
      await o.limits.qr(request, sessionHash);
      const answer = await o.login.requestQr(details, body, { sessionHash, origin: o.serviceOrigin });
      reply.header('cache-control', 'no-store');
      // Already JSON (text and base64 made ahead): sent as it is, past the serialiser, as POST /QuickLogin does.
      if (answer instanceof SerializedJson) return reply.type('application/json; charset=utf-8').send(answer.bytes as never);
      return reply.send(answer);
    },
  );

  app.post(
    `${OIDC_MOUNT}/interaction/:uid/complete`,
    { schema: { tags, summary: 'Finishes the login once the page heard the signed result; answers where to go', params: UidParams, body: CompleteBody, response: { 200: Type.Object({ redirectTo: Type.String() }), ...problems('validation_failed', 'not_found', 'origin_not_allowed', 'session_missing') } } },
    async (request, reply) => {
      const sessionHash = pageSession(request);
      const details = await interaction(request, reply, request.params.uid);
      const result = await o.login.outcome(details, request.body.tab, sessionHash);
      if (!result) throw new TabwireError('not_found', 'No approval has come for this login yet');
      const redirectTo = await o.holder.current().provider.interactionResult(request.raw, reply.raw, result, { mergeWithLastSubmission: false });
      return reply.header('cache-control', 'no-store').send({ redirectTo });
    },
  );
}
