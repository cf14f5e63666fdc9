import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { packageRoot } from '../package-root.js';
import { media, problems } from './openapi-schemas.js';
import { handOutSession, type CookiePolicy } from './session.js';

/** Pages are static; everything dynamic comes from the JSON API and is rendered with textContent. */
const CONTENT_SECURITY_POLICY =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const ASSETS = {
  '/demo.js': { file: 'demo.js', type: 'text/javascript; charset=utf-8' },
  '/sign.js': { file: 'sign.js', type: 'text/javascript; charset=utf-8' },
  '/oidc-login.js': { file: 'oidc-login.js', type: 'text/javascript; charset=utf-8' },
  '/style.css': { file: 'style.css', type: 'text/css; charset=utf-8' },
  // The pages link the icon (rel=icon); /favicon.ico too, for browsers that ask for it on any page (a PNG there is fine).
  '/favicon.png': { file: 'favicon.png', type: 'image/png' },
  '/favicon.ico': { file: 'favicon.png', type: 'image/png' },
} as const;

/** Reads a page from `public/` once. */
export const readPage = (name: string): Buffer => readFileSync(join(packageRoot(), 'public', name));

/** Sends an HTML page with the headers every page of the service carries. */
export function sendPage(reply: FastifyReply, html: Buffer): FastifyReply {
  return reply
    .type('text/html; charset=utf-8')
    .header('content-security-policy', CONTENT_SECURITY_POLICY)
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'no-referrer')
    .header('cache-control', 'no-cache')
    .send(html);
}

/**
 * The demo page at `/` and its assets (docs/events.md). The page hands out the session cookie, so its
 * first QR request carries it even before the event channel is up.
 */
export async function pagesRoutes(app: FastifyInstance, o: { cookies: CookiePolicy }): Promise<void> {
  const index = readPage('index.html');
  const pageSchema = { tags: ['Pages'], summary: 'The demo page (sets the session cookie)', response: { 200: media('text/html', 'The page'), ...problems() } };
  app.get('/', { schema: pageSchema }, async (request, reply) => {
    handOutSession(request, reply, o.cookies);
    return sendPage(reply, index);
  });
  for (const [path, asset] of Object.entries(ASSETS)) {
    const content = readPage(asset.file);
    const assetSchema = { tags: ['Pages'], summary: `An asset of the pages (${asset.file})`, response: { 200: media(asset.type.split(';')[0]!, 'The file'), ...problems() } };
    app.get(path, { schema: assetSchema }, async (_request, reply) =>
      reply.type(asset.type).header('x-content-type-options', 'nosniff').header('cache-control', 'no-cache').send(content),
    );
  }
}
