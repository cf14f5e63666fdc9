#!/usr/bin/env node
// npm's `prepare` lifecycle (docs/sdk.md "Installing"): builds dist/ so that an install from git, and
// `npm pack`, carry the built service and SDK entry points (`tabwire/client`, `tabwire/backend`).
// npm runs `prepare` after `npm install`/`npm ci` in a clone too; an install without what the build needs
// skips the build instead of failing, and says so: a production install without the build tools
// (`npm ci --omit=dev`), and the install npm makes in its clone of the repository to build one SDK
// package from git (`…::path:packages/client`, docs/sdk.md), which installs only that package's tools.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';

// Looked up where npm installs a clone's dependencies (not with require.resolve: some packages export
// no ./package.json).
const root = new URL('..', import.meta.url);
const { dependencies } = JSON.parse(readFileSync(new URL('package.json', root), 'utf8'));
const missing = ['typescript', 'esbuild', ...Object.keys(dependencies)].filter((name) => !existsSync(new URL(`node_modules/${name}/package.json`, root)));
if (missing.length > 0) {
  const shown = missing.length > 3 ? `${missing.slice(0, 3).join(', ')} and ${missing.length - 3} more` : missing.join(', ');
  console.log(`tabwire prepare: ${shown} not installed (devDependencies omitted, or a workspace-only install); dist/ not built`);
  process.exit(0);
}

// npm sets npm_execpath for lifecycle scripts; run the same npm that runs us.
const npmCli = process.env.npm_execpath;
const result = npmCli
  ? spawnSync(process.execPath, [npmCli, 'run', 'build'], { stdio: 'inherit' })
  : spawnSync('npm', ['run', 'build'], { stdio: 'inherit', shell: process.platform === 'win32' });
process.exit(result.status ?? 1);
