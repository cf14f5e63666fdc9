import { readFileSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { BrowserContext, Page } from 'playwright-core';
import { freePort } from './service.js';

/**
 * The page under test of the reference-page suite (test/browser/fixtures): a page written for the
 * reference deployments, with stand-ins for their older event script and QuickLogin page script.
 */
const FIXTURES = new URL('../browser/fixtures/', import.meta.url);
const TEMPLATE = readFileSync(new URL('reference-page.html', FIXTURES), 'utf8');
const SCRIPTS: Record<string, string> = {
  '/reference-events.js': readFileSync(new URL('reference-events.js', FIXTURES), 'utf8'),
  '/reference-quicklogin.js': readFileSync(new URL('reference-quicklogin.js', FIXTURES), 'utf8'),
};

export interface ReferencePageOptions {
  /** `host[:port]` for `<meta name="NEURON">` (the service host); none: the page's own host. */
  neuron?: string;
  /** The QuickLogin `<div id="quickLoginCode">`; none: the page runs the event script only. */
  quickLogin?: { mode: 'image' | 'base64' | 'text'; purpose: string; serviceId?: string };
}

const attribute = (value: string): string => value.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');

export function referencePageHtml(o: ReferencePageOptions = {}): string {
  const neuron = o.neuron === undefined ? '' : `<meta name="NEURON" content="${attribute(o.neuron)}">`;
  const q = o.quickLogin;
  const div =
    q === undefined
      ? ''
      : `<div id="quickLoginCode" data-mode="${q.mode}" data-purpose="${attribute(q.purpose)}"${q.serviceId ? ` data-serviceId="${attribute(q.serviceId)}"` : ''}></div>`;
  return TEMPLATE.replace('<!--NEURON-->', neuron).replace('<!--QUICKLOGIN-->', div);
}

/** A web server of the page's own site (another host than the service): serves the pages and their scripts. */
export interface PageServer {
  readonly origin: string;
  readonly port: number;
  /** Serves `html` at `path` (a path without query; pages read their switches from the query string). */
  set(path: string, html: string): void;
  close(): Promise<void>;
}

export async function startPageServer(o: { hostName?: string; tls?: { cert: Buffer; key: Buffer } } = {}): Promise<PageServer> {
  const pages = new Map<string, string>();
  const handler = (request: IncomingMessage, response: ServerResponse) => {
    const path = (request.url ?? '/').split('?')[0]!;
    const script = SCRIPTS[path];
    const page = pages.get(path);
    if (script !== undefined) {
      response.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8', 'cache-control': 'no-store' });
      response.end(script);
    } else if (page !== undefined) {
      response.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
      response.end(page);
    } else {
      // What a relative QR `src` meets on the page's own host.
      response.writeHead(404, { 'content-type': 'text/plain' });
      response.end('not on this site');
    }
  };
  const server: Server = o.tls ? createHttpsServer({ cert: o.tls.cert, key: o.tls.key }, handler) : createHttpServer(handler);
  const port = await freePort();
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    origin: `${o.tls ? 'https' : 'http'}://${o.hostName ?? '127.0.0.1'}:${port}`,
    port,
    set: (path, html) => pages.set(path, html),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * Serves a page at `origin` + `path` (and the scripts beside it) from the test through the browser's
 * request routing: the page then runs at the service's own origin, as pages hosted with the service do.
 * Everything else at that origin still reaches the service.
 */
export async function routeReferencePage(context: BrowserContext, origin: string, path: string, html: string): Promise<void> {
  await context.route(
    (url) => url.origin === origin && (url.pathname === path || url.pathname in SCRIPTS),
    (route) => {
      const { pathname } = new URL(route.request().url());
      const script = SCRIPTS[pathname];
      return route.fulfill(
        script === undefined
          ? { contentType: 'text/html; charset=utf-8', body: html }
          : { contentType: 'text/javascript; charset=utf-8', body: script },
      );
    },
  );
}

/** Records every alert() (and other dialog) a page shows, across reloads, and dismisses it. */
export function recordDialogs(page: Page): string[] {
  const dialogs: string[] = [];
  page.on('dialog', (dialog) => {
    dialogs.push(`${dialog.type()}: ${dialog.message()}`);
    void dialog.dismiss().catch(() => undefined);
  });
  return dialogs;
}

/** What the page's scripts recorded (see the fixtures' comments). */
export interface ReferenceState {
  tabId: string;
  ref: { opens: number; errors: number; closes: number[]; registers: number; events: string[]; dispatchErrors: string[]; polls: number; pollStatuses: number[] };
  qr: Array<{ signUrl: string; src?: string; text?: string; base64?: string; width?: number; height?: number }>;
  images: Array<{ src: string; loaded: boolean | null; naturalWidth?: number }>;
  signatures: any[];
  signaturesBE: any[];
  probes: unknown[];
}

export const referenceState = (page: Page): Promise<ReferenceState> =>
  page.evaluate(() => {
    const w = window as any;
    return {
      tabId: window.name,
      ref: w.__ref,
      qr: w.__qr ?? [],
      images: w.__images ?? [],
      signatures: w.__signatures,
      signaturesBE: w.__signaturesBE,
      probes: w.__probes,
    };
  });
