#!/usr/bin/env node
// Builds the web wallet (docs/wallet.md) from src/wallet/ and public/wallet/ into one folder of static
// files: dist/wallet/ (served by tabwire at /wallet/), or, for a separate origin,
//   node scripts/build-wallet.mjs --out <folder> --service https://auth.example.org
// which names the service in the page (and in its Content-Security-Policy's connect-src).
// esbuild bundles (type-stripping only); `npm run typecheck` typechecks src/wallet/.
import { createHash } from 'node:crypto';
import { cp, mkdir, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import * as esbuild from 'esbuild';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const walletDir = path.join(root, 'src', 'wallet');
const protocolDir = path.join(root, 'src', 'protocol');
const assetsDir = path.join(root, 'public', 'wallet');

const { values } = parseArgs({ options: { out: { type: 'string' }, service: { type: 'string' } } });
const out = path.resolve(values.out ?? path.join(root, 'dist', 'wallet'));
let service = '';
if (values.service !== undefined) {
  const url = new URL(values.service);
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new Error(`--service ${values.service}: an http(s) origin`);
  service = url.origin;
}

const inside = (dir, file) => file === dir || file.startsWith(dir + path.sep);
// The wallet may import only its own folder, ../protocol/ and the QR decoder: no server module can slip in.
const PACKAGES = new Set(['jsqr']);
const boundary = {
  name: 'wallet-boundary',
  setup(build) {
    build.onResolve({ filter: /.*/ }, (args) => {
      // The decoder is its own file, fetched on first use: the page's import stays a URL next to wallet.js.
      if (args.kind === 'dynamic-import' && args.path === './jsqr.js' && inside(walletDir, args.importer)) return { path: './jsqr.js', external: true };
      if (args.kind === 'entry-point' || PACKAGES.has(args.path)) return undefined;
      if (inside(path.join(root, 'node_modules'), args.importer)) return undefined;
      const target = args.path.startsWith('.') ? path.resolve(args.resolveDir, args.path) : undefined;
      if (target && (inside(walletDir, target) || inside(protocolDir, target))) return undefined;
      const from = path.relative(root, args.importer);
      return { errors: [{ text: `${from} imports "${args.path}"; the wallet may import only src/wallet/, src/protocol/ and ${[...PACKAGES].join(', ')}` }] };
    });
  },
};

const common = {
  bundle: true,
  platform: 'browser',
  tsconfig: path.join(walletDir, 'tsconfig.json'),
  plugins: [boundary],
  charset: 'utf8',
  legalComments: 'none',
  logLevel: 'warning',
  minify: true,
  target: 'es2022',
};

const started = performance.now();
await rm(out, { recursive: true, force: true });
await mkdir(out, { recursive: true });
await cp(assetsDir, out, { recursive: true });
await Promise.all([
  esbuild.build({ ...common, entryPoints: [path.join(walletDir, 'main.ts')], outfile: path.join(out, 'wallet.js'), format: 'esm' }),
  esbuild.build({ ...common, entryPoints: [path.join(walletDir, 'jsqr.ts')], outfile: path.join(out, 'jsqr.js'), format: 'esm' }),
]);

if (service !== '') {
  const file = path.join(out, 'index.html');
  const html = (await readFile(file, 'utf8'))
    .replace('<meta name="tabwire-service" content="">', `<meta name="tabwire-service" content="${service}">`)
    .replace("connect-src 'self'", `connect-src 'self' ${service}`);
  await writeFile(file, html);
}

// The service worker's cache is named after the shell's content, so every build that changes it replaces the old cache.
const hash = createHash('sha256');
for (const name of (await readdir(out)).sort()) hash.update(name).update(await readFile(path.join(out, name)));
const version = hash.digest('base64url').slice(0, 12);
await esbuild.build({
  ...common,
  entryPoints: [path.join(walletDir, 'sw.ts')],
  outfile: path.join(out, 'sw.js'),
  format: 'iife',
  tsconfig: path.join(walletDir, 'tsconfig.sw.json'),
  define: { WALLET_VERSION: JSON.stringify(version) },
});
console.log(`wallet build: ${path.relative(root, out) || out} (version ${version}${service ? `, service ${service}` : ''}, ${Math.round(performance.now() - started)} ms)`);
