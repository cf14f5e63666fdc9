#!/usr/bin/env node
// Builds an SDK package (packages/client, packages/backend) from the service's own sources, so the
// packages and the service's `tabwire/client` and `tabwire/backend` exports are one code (docs/sdk.md
// "How the packages are built"). Each package's `prepack` runs it on `npm pack -w packages/<name>`, and the
// root's `prepare` (prepare.mjs) on an install of one package from git. It builds only when a source is
// newer than the package's last build (freshness.mjs).
//   node scripts/build-sdk.mjs client|backend [--force]
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { staleness, writeStamp } from './freshness.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const src = (...p) => path.join(root, 'src', ...p);
const script = (name) => path.join(root, 'scripts', name);
const tsc = () => createRequire(import.meta.url).resolve('typescript/bin/tsc');

/** Per package: what its build reads, and how it builds into `out`. */
const PACKAGES = {
  // The browser client: esbuild bundles src/browser (and the src/protocol types it uses) into one ES
  // module, the same build as the service's dist/client; tsc writes the declarations.
  client: {
    inputs: [src('browser'), src('protocol'), script('build-browser.mjs')],
    build: (out) => [process.execPath, [script('build-browser.mjs'), '--client-out', out]],
  },
  // The callback and result verifiers: tsc compiles src/callbacks/verify.ts and what it imports (the
  // protocol's strict Ed25519 encoding checks, quicklogin/verify-result.ts), nothing else.
  backend: {
    // All of src/: tsc follows the imports wherever they lead, so no narrower list can be trusted.
    inputs: [src(), path.join(root, 'tsconfig.json')],
    build: (out) => [process.execPath, [tsc(), '-p', path.join(root, 'packages', 'backend', 'tsconfig.json'), '--outDir', out]],
  },
};

const { values: args, positionals } = parseArgs({ allowPositionals: true, options: { force: { type: 'boolean', default: false } } });
const name = positionals[0];
const pkg = PACKAGES[name];
if (pkg === undefined) {
  console.error(`usage: build-sdk.mjs ${Object.keys(PACKAGES).join('|')} [--force]`);
  process.exit(2);
}
const dir = path.join(root, 'packages', name);
const out = path.join(dir, 'dist');
const inputs = [...pkg.inputs, path.join(dir, 'package.json'), path.join(dir, 'tsconfig.json'), script('build-sdk.mjs'), script('freshness.mjs')];
const reason = args.force ? 'rebuild asked for' : staleness(out, inputs);
if (reason === undefined) {
  console.log(`@tabwire/${name}: dist/ is up to date`);
  process.exit(0);
}
const started = Date.now();
rmSync(out, { recursive: true, force: true });
const [command, commandArgs] = pkg.build(out);
const result = spawnSync(command, commandArgs, { cwd: root, stdio: 'inherit' });
if (result.status !== 0) process.exit(result.status ?? 1);
writeStamp(out, started);
console.log(`@tabwire/${name}: built (${reason}) in ${Date.now() - started} ms`);
