import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { TabwireError } from '../errors.js';
import { packageRoot } from '../package-root.js';
import { media, noBody, problems } from './openapi-schemas.js';

/**
 * The web wallet (docs/wallet.md) at `/wallet/`: static files built by scripts/build-wallet.mjs into
 * dist/wallet/, read once at start. The wallet renders everything from the wire as text, so its policy
 * allows scripts from this origin only (no inline script, no eval), and the camera for this origin only.
 */
const CONTENT_SECURITY_POLICY =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; connect-src 'self'; worker-src 'self'; manifest-src 'self'; media-src 'self' blob:; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.webmanifest': 'application/manifest+json',
  '.png': 'image/png',
};

export interface WalletRoutesOptions {
  /** The built wallet; default dist/wallet under the package root. */
  dir?: string;
}

function readBuild(dir: string): Map<string, Buffer> | undefined {
  try {
    return new Map(readdirSync(dir).filter((name) => TYPES[path.extname(name)] !== undefined).map((name) => [name, readFileSync(path.join(dir, name))]));
  } catch {
    return undefined;
  }
}

export async function walletRoutes(app: FastifyInstance, o: WalletRoutesOptions = {}): Promise<void> {
  const dir = o.dir ?? path.join(packageRoot(), 'dist', 'wallet');
  const files = readBuild(dir);
  const send = (reply: FastifyReply, name: string, content: Buffer): FastifyReply => {
    reply
      .type(TYPES[path.extname(name)]!)
      // Revalidated on every load, so a deploy reaches the wallet at once; the service worker keeps the offline copy.
      .header('cache-control', 'no-cache')
      .header('referrer-policy', 'no-referrer');
    if (name.endsWith('.html')) reply.header('content-security-policy', CONTENT_SECURITY_POLICY).header('permissions-policy', 'camera=(self)');
    return reply.send(content);
  };

  const tags = ['Pages'];
  // /wallet → /wallet/ keeping the query (an app link's ?sign=…); the fragment (#sign=…) stays with the browser.
  app.get('/wallet', { schema: { tags, summary: 'Redirects to the web wallet at /wallet/', response: { 301: noBody('Moved Permanently to /wallet/ (Location keeps the query)'), ...problems() } } }, async (request, reply) => {
    const query = request.url.indexOf('?');
    return reply.redirect(`/wallet/${query === -1 ? '' : request.url.slice(query)}`, 301);
  });
  const index = files?.get('index.html');
  // Not in the OpenAPI document: a static app's page, and its path ends in a slash (docs/openapi.md "Lint").
  app.get('/wallet/', { schema: { hide: true, tags, summary: 'The web wallet (docs/wallet.md)', response: { 200: media('text/html', 'The wallet'), ...problems('not_found') } } }, async (_request, reply) => {
    if (!index) throw new TabwireError('not_found', 'The wallet is not built on this service: run `npm run build`');
    return send(reply, 'index.html', index);
  });
  for (const [name, content] of files ?? []) {
    if (name === 'index.html') continue;
    const type = TYPES[path.extname(name)]!.split(';')[0]!;
    // The web app manifest is JSON (W3C Web Application Manifest); the rest is text or bytes.
    const body = type === 'application/manifest+json' ? media(type, 'The web app manifest', Type.Object({}, { additionalProperties: true })) : media(type, 'The file');
    app.get(`/wallet/${name}`, { schema: { tags, summary: `A file of the web wallet (${name})`, response: { 200: body, ...problems() } } }, async (_request, reply) =>
      send(reply, name, content),
    );
  }
}
