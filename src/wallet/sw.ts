/**
 * The wallet's service worker: keeps the app shell (page, scripts, style, manifest, icons) so the
 * wallet opens without a network. Network first, so a deployed update is seen at the next online
 * load; the cache answers only when the network fails. Nothing from the API is cached: a request to
 * sign is always fetched fresh. Scope: the wallet's folder only.
 */
export {};
declare const self: ServiceWorkerGlobalScope;
// Replaced at build time with a hash of the shell's files, so a new build gets a new cache.
declare const WALLET_VERSION: string;

const CACHE = `tabwire-wallet-${WALLET_VERSION}`;
const SHELL = ['./', 'wallet.js', 'jsqr.js', 'wallet.css', 'manifest.webmanifest', 'icon-192.png', 'icon-512.png'];

self.addEventListener('install', (event) => {
  event.waitUntil(
    caches
      .open(CACHE)
      .then((cache) => cache.addAll(SHELL))
      .then(() => self.skipWaiting()),
  );
});

self.addEventListener('activate', (event) => {
  event.waitUntil(
    caches
      .keys()
      .then((names) => Promise.all(names.filter((n) => n.startsWith('tabwire-wallet-') && n !== CACHE).map((n) => caches.delete(n))))
      .then(() => self.clients.claim()),
  );
});

const scope = new URL(self.registration.scope);
const shellUrls = new Set(SHELL.map((path) => new URL(path, scope).href));

self.addEventListener('fetch', (event) => {
  const { request } = event;
  if (request.method !== 'GET') return;
  const url = new URL(request.url);
  // The page itself, whatever its query (?sign=…), and the shell's files; everything else goes to the network untouched.
  const page = request.mode === 'navigate' && url.origin === scope.origin && url.pathname === scope.pathname;
  if (!page && !shellUrls.has(url.origin + url.pathname)) return;
  const key = page ? new URL('./', scope).href : url.origin + url.pathname;
  event.respondWith(
    fetch(request).then(
      async (response) => {
        if (response.ok) {
          const cache = await caches.open(CACHE);
          await cache.put(key, response.clone());
        }
        return response;
      },
      async (err: unknown) => (await caches.match(key)) ?? Promise.reject(err),
    ),
  );
});
