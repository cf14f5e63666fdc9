/**
 * Module hooks for benchmark children (registered by shipped-code.mjs): a module of src/ resolves to
 * the file tsc built from it in dist/, and a file of dist/ is loaded as it is on disk, without tsx's
 * transform. tsx compiles with esbuild's `keepNames`, which gives every named function made at run time
 * a property dictionary of its own (~256 B on V8): per tab, that was ~250 B of the channel benchmarks'
 * memory figures that the built service never had (docs/benchmarks-history.md "channel-memory").
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';

const root = new URL('../../../', import.meta.url).href;
const src = `${root}src/`;
const dist = `${root}dist/`;

export async function resolve(specifier, context, nextResolve) {
  const resolved = await nextResolve(specifier, context);
  if (!resolved.url.startsWith(src) || !resolved.url.endsWith('.ts')) return resolved;
  const built = `${dist}${resolved.url.slice(src.length, -'.ts'.length)}.js`;
  if (!existsSync(new URL(built))) throw new Error(`${built} is missing: the benchmark servers run the built code (npm run build)`);
  return { url: built, format: 'module', shortCircuit: true };
}

export async function load(url, context, nextLoad) {
  if (!url.startsWith(dist) || !url.endsWith('.js')) return nextLoad(url, context);
  return { format: 'module', source: await readFile(new URL(url)), shortCircuit: true };
}
