/**
 * The benchmark children run src/ in its built form (shipped-code-hooks.mjs), so dist/ must be as new as
 * src/: when a source file changed after the last build, `npm run build` runs first (once per process).
 * `BENCH_CODE=src` runs src/ through tsx instead, for a quick look at an edit without a build; its memory
 * figures then include tsx's per-function dictionaries (shipped-code-hooks.mjs).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../../', import.meta.url));

/** Whether the children run the built code (the default) or src/ through tsx. */
export const runsBuiltCode = (): boolean => process.env.BENCH_CODE !== 'src';

let ensured = false;

/** Builds dist/ when it is missing or older than a file of src/. */
export function ensureBuilt(): void {
  if (ensured || !runsBuiltCode()) return;
  ensured = true;
  const marker = `${root}dist/main.js`;
  const builtAt = existsSync(marker) ? statSync(marker).mtimeMs : 0;
  const sources = readdirSync(`${root}src`, { recursive: true, encoding: 'utf8' }).map((file) => `${root}src/${file}`);
  if (sources.every((file) => statSync(file).mtimeMs <= builtAt)) return;
  console.log('src/ changed since dist/ was built: npm run build (the benchmark servers run the built code; BENCH_CODE=src skips this)');
  const build = spawnSync('npm', ['run', 'build'], { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] });
  if (build.status !== 0) throw new Error(`npm run build failed (exit ${build.status}): the benchmark servers need dist/`);
}
