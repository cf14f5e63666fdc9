#!/usr/bin/env node
// Builds the service into dist/ (docs/sdk.md "How the build gets into the package"): the server and CLI
// (tsc), the browser event client (build-browser.mjs) and the wallet (build-wallet.mjs), then the stamp
// that says from which sources (freshness.mjs).
//   node scripts/build.mjs             build (npm run build, and `prepare` on npm ci / npm pack / git installs)
//   node scripts/build.mjs --if-stale  build only when a source is newer than the last build (prestart,
//                                      pretest): a fresh dist/ is never rebuilt, since tests run processes
//                                      from it in parallel and a build first deletes it
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { staleness, writeStamp } from './freshness.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dist = path.join(root, 'dist');
/** Everything the build reads besides node_modules. */
const SERVICE_INPUTS = ['src', 'public', 'scripts', 'tsconfig.json', 'tsconfig.build.json', 'package.json'].map((p) => path.join(root, p));

const { values: args } = parseArgs({ options: { 'if-stale': { type: 'boolean', default: false } } });
if (args['if-stale']) {
  const reason = staleness(dist, SERVICE_INPUTS);
  if (reason === undefined) {
    console.log('dist/ is up to date: no source changed since the last build');
    process.exit(0);
  }
  console.log(`building dist/: ${reason}`);
}

const started = Date.now();
const step = (file, ...rest) => {
  const result = spawnSync(process.execPath, [file, ...rest], { cwd: root, stdio: 'inherit' });
  if (result.status !== 0) process.exit(result.status ?? 1);
};
rmSync(dist, { recursive: true, force: true });
step(createRequire(import.meta.url).resolve('typescript/bin/tsc'), '-p', 'tsconfig.build.json');
step(path.join(root, 'scripts', 'build-browser.mjs'));
step(path.join(root, 'scripts', 'build-wallet.mjs'));
writeStamp(dist, started);
