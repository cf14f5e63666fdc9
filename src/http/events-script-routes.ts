import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { packageRoot } from '../package-root.js';
import { media, noBody, problems } from './openapi-schemas.js';
import { handOutSession, type CookiePolicy } from './session.js';

export interface EventsScriptRoutesOptions {
  /** The session cookie is handed out with the script (see handOutSession). */
  cookies: CookiePolicy;
  /** The built script; default `dist/public/Events.js` under the package root (found from src/ and dist/ alike). */
  bundlePath?: string;
}

/** Browsers refetch at most every 5 minutes; a deploy reaches open pages on their next load. */
const CACHE_CONTROL = 'public, max-age=300';
const PRIVATE_CACHE_CONTROL = 'private, max-age=300';

/**
 * RFC 9110 §13.1.2: If-None-Match matches on `*` or any listed tag, compared weakly (a `W/`
 * prefix on either side is ignored).
 */
export function ifNoneMatchHits(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  if (header.trim() === '*') return true;
  const opaque = (tag: string) => tag.trim().replace(/^W\//, '');
  return header.split(',').some((tag) => opaque(tag) === opaque(etag));
}

/**
 * `GET /Events.js` (docs/events-js.md): the bundle built by
 * scripts/build-browser.mjs, read once here, with a strong ETag so a revalidation is a 304.
 */
export async function eventsScriptRoutes(app: FastifyInstance, o: EventsScriptRoutesOptions): Promise<void> {
  const file = o.bundlePath ?? path.join(packageRoot(), 'dist', 'public', 'Events.js');
  let script: Buffer;
  try {
    script = readFileSync(file);
  } catch (err) {
    throw new Error(`The browser event script ${file} is missing; run \`npm run build\` (or \`node scripts/build-browser.mjs\`) first`, {
      cause: err,
    });
  }
  const etag = `"${createHash('sha256').update(script).digest('base64url')}"`;

  // Pages on other hosts include the script (split hosts, docs/events.md); CORP lets pages
  // that set Cross-Origin-Embedder-Policy load it too.
  const headers = (reply: FastifyReply): FastifyReply =>
    reply
      .header('etag', etag)
      .header('cache-control', reply.getHeader('cache-control') ?? CACHE_CONTROL)
      .header('x-content-type-options', 'nosniff')
      .header('cross-origin-resource-policy', 'cross-origin');

  const schema = {
    tags: ['Events'],
    summary: 'The browser event script (docs/events-js.md); sets the session cookie',
    response: {
      200: media('text/javascript', 'The script, with a strong ETag'),
      304: noBody('Not Modified (If-None-Match matched the ETag, RFC 9110 §15.4.5)'),
      ...problems(),
    },
  };
  app.get('/Events.js', { schema }, async (request, reply) => {
    // A page loading the script gets its session now, before its event channel is up: its first QR
    // request carries it. A response that sets a cookie must never be stored by a shared cache.
    if (handOutSession(request, reply, o.cookies)) reply.header('cache-control', PRIVATE_CACHE_CONTROL);
    const ifNoneMatch = request.headers['if-none-match'];
    if (ifNoneMatchHits(ifNoneMatch, etag)) return headers(reply).code(304).send();
    return headers(reply).type('text/javascript; charset=utf-8').send(script);
  });
}
