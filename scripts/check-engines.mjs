#!/usr/bin/env node
// Fails when an installed package's `engines.node` does not admit the Node.js that runs this script: the
// check behind npm's EBADENGINE warning, made an error so that a supported line (README "Node.js versions")
// that a dependency has dropped is caught in CI rather than by a user's install. Run by
// scripts/test-node-line under the line's node. Only packages present in node_modules count: optional
// packages for another platform are in the lockfile but never installed, and npm does not check them either.
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
// npm's own range matcher (the one that prints EBADENGINE), from the npm that runs the install; npm sets
// npm_execpath for the scripts it runs, and scripts/test-node-line passes it in the same variable.
const npmCli = process.env.npm_execpath;
if (!npmCli) {
  console.error('check-engines: npm_execpath is not set (run it through scripts/test-node-line or npm)');
  process.exit(2);
}
const semver = createRequire(npmCli)('semver');

const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8'));
const refused = [];
for (const [path, entry] of Object.entries(lock.packages)) {
  const range = entry.engines?.node;
  if (path === '' || range === undefined || !existsSync(join(root, path))) continue;
  if (!semver.satisfies(process.version, range, { includePrerelease: true })) refused.push(`${path} (node ${range})`);
}
const own = lock.packages[''].engines?.node;
if (own !== undefined && !semver.satisfies(process.version, own)) refused.unshift(`tabwire itself (node ${own})`);

if (refused.length > 0) {
  console.error(`check-engines: Node.js ${process.version} is refused by:\n  ${refused.join('\n  ')}`);
  process.exit(1);
}
console.log(`check-engines: every installed package admits Node.js ${process.version}`);
