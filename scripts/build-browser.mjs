#!/usr/bin/env node
// Builds the browser event client from src/browser/ (docs/events.md):
//   dist/public/Events.js   IIFE, minified, served at GET /Events.js; installs window.Events
//   dist/client/index.js    ES module for the `tabwire/client` export, with index.d.ts beside it
// esbuild bundles (type-stripping only); tsc typechecks the same sources and emits the declarations.
// `--client-out DIR` builds only the ES module and its declarations, into DIR: the `@tabwire/client`
// package (packages/client, scripts/build-sdk.mjs) is built from these same sources this way.
import { spawn } from 'node:child_process';
import { mkdir, rm, stat, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import * as esbuild from 'esbuild';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const browserDir = path.join(root, 'src', 'browser');
const protocolDir = path.join(root, 'src', 'protocol');
const tsconfig = path.join(browserDir, 'tsconfig.json');
const publicOut = path.join(root, 'dist', 'public', 'Events.js');
const { values: args } = parseArgs({ options: { 'client-out': { type: 'string' } } });
const clientOnly = args['client-out'] !== undefined;
const clientDir = clientOnly ? path.resolve(args['client-out']) : path.join(root, 'dist', 'client');

const inside = (dir, file) => file === dir || file.startsWith(dir + path.sep);

// The browser code may import only its own folder and ../protocol/ (which imports nothing), so no
// server module or npm package can slip into the page's script.
const boundary = {
  name: 'browser-boundary',
  setup(build) {
    build.onResolve({ filter: /.*/ }, (args) => {
      if (args.kind === 'entry-point') return undefined;
      const target = args.path.startsWith('.') ? path.resolve(args.resolveDir, args.path) : undefined;
      if (target && (inside(browserDir, target) || inside(protocolDir, target))) return undefined;
      const from = path.relative(root, args.importer);
      return { errors: [{ text: `${from} imports "${args.path}"; browser code may import only src/browser/ and src/protocol/` }] };
    });
  },
};

const common = {
  bundle: true,
  platform: 'browser',
  tsconfig,
  plugins: [boundary],
  charset: 'utf8',
  legalComments: 'none',
  logLevel: 'warning',
};

function run(command, args) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: root, stdio: 'inherit' });
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${path.basename(args[0])} exited with ${code}`))));
  });
}

async function declarations() {
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const typesDir = path.join(clientDir, 'types');
  // rootDir is src/, so the declarations keep the browser/ and protocol/ folders side by side.
  await run(process.execPath, [tsc, '-p', tsconfig, '--noEmit', 'false', '--declaration', '--emitDeclarationOnly', '--outDir', typesDir]);
  await writeFile(path.join(clientDir, 'index.d.ts'), "export * from './types/browser/index.js';\n");
}

const started = performance.now();
await Promise.all([rm(clientDir, { recursive: true, force: true }), clientOnly || rm(publicOut, { force: true })]);
await Promise.all([clientOnly || mkdir(path.dirname(publicOut), { recursive: true }), mkdir(clientDir, { recursive: true })]);

await Promise.all([
  clientOnly ||
  esbuild.build({
    ...common,
    entryPoints: [path.join(browserDir, 'global.ts')],
    outfile: publicOut,
    format: 'iife',
    minify: true,
    // Pages of all ages include this script; es2019 lowers ?? and ?. for older Safari.
    target: 'es2019',
    banner: { js: '/* tabwire Events.js: window.Events, AgentAPI.IO.SetHost */' },
  }),
  esbuild.build({
    ...common,
    entryPoints: [path.join(browserDir, 'index.ts')],
    outfile: path.join(clientDir, 'index.js'),
    format: 'esm',
    target: 'es2020',
    sourcemap: true,
  }),
  declarations(),
]);

const size = (file) => stat(file).then((s) => `${path.relative(root, file)} ${(s.size / 1024).toFixed(1)} KiB`);
const sizes = await Promise.all([...(clientOnly ? [] : [size(publicOut)]), size(path.join(clientDir, 'index.js'))]);
console.log(`browser build: ${sizes.join(', ')}, declarations in ${path.relative(root, clientDir)} (${Math.round(performance.now() - started)} ms)`);
