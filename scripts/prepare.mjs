#!/usr/bin/env node
// npm's `prepare` lifecycle (docs/sdk.md "Installing"): builds dist/ so that an install from git, and
// `npm pack`, carry the built service and SDK entry points (`tabwire/client`, `tabwire/backend`).
// npm runs `prepare` after `npm install`/`npm ci` in a clone too; a production install without the build
// tools (`npm ci --omit=dev`) skips the build instead of failing, and says so.
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const missing = ['typescript', 'esbuild'].filter((name) => {
  try {
    require.resolve(`${name}/package.json`);
    return false;
  } catch {
    return true;
  }
});
if (missing.length > 0) {
  console.log(`tabwire prepare: ${missing.join(', ')} not installed (devDependencies omitted?); dist/ not built`);
  process.exit(0);
}

// npm sets npm_execpath for lifecycle scripts; run the same npm that runs us.
const npmCli = process.env.npm_execpath;
const result = npmCli
  ? spawnSync(process.execPath, [npmCli, 'run', 'build'], { stdio: 'inherit' })
  : spawnSync('npm', ['run', 'build'], { stdio: 'inherit', shell: process.platform === 'win32' });
process.exit(result.status ?? 1);
