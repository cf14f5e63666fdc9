#!/usr/bin/env node
// npm's `prepare` lifecycle (docs/sdk.md "How the build gets into the package"): builds dist/ so that an
// install from git, and `npm pack`, carry the built service and its SDK entry points (`tabwire/client`,
// `tabwire/backend`). npm runs `prepare` after `npm install`/`npm ci` in a clone too.
//
// Started from an SDK package's folder (INIT_CWD is packages/<name>), it builds that package instead: an
// install of one package from git (`…#<commit>::path:packages/client`, docs/sdk.md "From git") makes npm
// clone the repository and run `npm install` in that folder, which installs that package's build tools only
// and runs this root `prepare`; the packed folder must then hold the package's build. The packages
// themselves have no `prepare` (only `prepack`), so installing one runs no script of its own.
//
// An install without what the service's build needs (`npm ci --omit=dev`: no build tools) skips the build
// instead of failing, and says so.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const packagesDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'packages');
const started = path.relative(packagesDir, path.resolve(process.env.INIT_CWD ?? process.cwd()));
const sdkPackage = started.split(path.sep)[0];
if (sdkPackage && !started.startsWith('..') && !path.isAbsolute(started) && existsSync(path.join(packagesDir, sdkPackage, 'package.json'))) {
  const build = spawnSync(process.execPath, [fileURLToPath(new URL('build-sdk.mjs', import.meta.url)), sdkPackage], { stdio: 'inherit' });
  process.exit(build.status ?? 1);
}

// Looked up where npm installs a clone's dependencies (not with require.resolve: some packages export
// no ./package.json).
const root = new URL('..', import.meta.url);
const { dependencies } = JSON.parse(readFileSync(new URL('package.json', root), 'utf8'));
const missing = ['typescript', 'esbuild', ...Object.keys(dependencies)].filter((name) => !existsSync(new URL(`node_modules/${name}/package.json`, root)));
if (missing.length > 0) {
  const shown = missing.length > 3 ? `${missing.slice(0, 3).join(', ')} and ${missing.length - 3} more` : missing.join(', ');
  console.log(`tabwire prepare: ${shown} not installed (devDependencies omitted?); dist/ not built`);
  process.exit(0);
}

// npm sets npm_execpath for lifecycle scripts; run the same npm that runs us.
const npmCli = process.env.npm_execpath;
const result = npmCli
  ? spawnSync(process.execPath, [npmCli, 'run', 'build'], { stdio: 'inherit' })
  : spawnSync('npm', ['run', 'build'], { stdio: 'inherit', shell: process.platform === 'win32' });
process.exit(result.status ?? 1);
