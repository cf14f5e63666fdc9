import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import cookie from '@fastify/cookie';
import Fastify from 'fastify';
import { afterAll, describe, expect, it } from 'vitest';
import { eventsScriptRoutes, ifNoneMatchHits } from '../../src/http/events-script-routes.js';
import { registerSharedSchemas } from '../../src/http/openapi.js';
import { packageRoot } from '../../src/package-root.js';

const dir = mkdtempSync(path.join(tmpdir(), 'tabwire-events-js-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const body = '(()=>{window.Events={}})();\n';
const bundlePath = path.join(dir, 'Events.js');
writeFileSync(bundlePath, body);
const etag = `"${createHash('sha256').update(body).digest('base64url')}"`;

const cookies = { secure: false, sameSite: 'lax' } as const;
/** A page that has its session already (the script is then cacheable by anyone). */
const SESSION = { cookie: `tabwire_sid=${'s'.repeat(43)}` };

async function app(options: { bundlePath?: string } = { bundlePath }) {
  const a = Fastify();
  // As in buildApp: the route schemas reference the shared Problem schema.
  registerSharedSchemas(a);
  await a.register(cookie);
  await a.register(eventsScriptRoutes, { ...options, cookies });
  return a;
}

describe('GET /Events.js', () => {
  it('hands a page without a session its cookie with the script, and then never lets a shared cache keep it', async () => {
    for (const headers of [{}, { 'if-none-match': etag }]) {
      const res = await (await app()).inject({ method: 'GET', url: '/Events.js', headers });
      expect(String(res.headers['set-cookie'])).toMatch(/^tabwire_sid=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Lax$/);
      expect(res.headers['cache-control']).toBe('private, max-age=300');
    }
  });

  it('serves the bundle as JavaScript with a strong sha-256 ETag, 5-minute caching and nosniff', async () => {
    const res = await (await app()).inject({ method: 'GET', url: '/Events.js', headers: SESSION });
    expect(res.statusCode).toBe(200);
    expect(res.body).toBe(body);
    expect(res.headers['set-cookie']).toBeUndefined();
    expect(res.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(res.headers['cache-control']).toBe('public, max-age=300');
    expect(res.headers.etag).toBe(etag);
    expect(res.headers['x-content-type-options']).toBe('nosniff');
  });

  it.each([etag, `W/${etag}`, `"other", ${etag}`, '*'])('answers 304 with the ETag to If-None-Match %s', async (ifNoneMatch) => {
    const res = await (await app()).inject({ method: 'GET', url: '/Events.js', headers: { 'if-none-match': ifNoneMatch, ...SESSION } });
    expect(res.statusCode).toBe(304);
    expect(res.body).toBe('');
    expect(res.headers.etag).toBe(etag);
    expect(res.headers['cache-control']).toBe('public, max-age=300');
  });

  it('answers 200 to a stale ETag, and to HEAD without a body', async () => {
    const a = await app();
    const stale = await a.inject({ method: 'GET', url: '/Events.js', headers: { 'if-none-match': '"old"' } });
    expect(stale.statusCode).toBe(200);
    const head = await a.inject({ method: 'HEAD', url: '/Events.js' });
    expect(head.statusCode).toBe(200);
    expect(head.body).toBe('');
    expect(head.headers.etag).toBe(etag);
  });

  it('refuses to start without the bundle, saying to build it', async () => {
    await expect(app({ bundlePath: path.join(dir, 'missing.js') })).rejects.toThrow(/npm run build/);
  });

  it.skipIf(!existsSync(path.join(packageRoot(), 'dist/public/Events.js')))('serves the built bundle by default', async () => {
    const a = await app({});
    const res = await a.inject({ method: 'GET', url: '/Events.js' });
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain('ClientEventsWS');
  });
});

describe('If-None-Match matching (RFC 9110 §13.1.2)', () => {
  it('compares weakly and accepts lists and *', () => {
    expect(ifNoneMatchHits(undefined, '"a"')).toBe(false);
    expect(ifNoneMatchHits('"a"', '"a"')).toBe(true);
    expect(ifNoneMatchHits('W/"a"', '"a"')).toBe(true);
    expect(ifNoneMatchHits('"b" , "a"', '"a"')).toBe(true);
    expect(ifNoneMatchHits('"b"', '"a"')).toBe(false);
    expect(ifNoneMatchHits('*', '"a"')).toBe(true);
  });
});
