// Is a build output fresh? (docs/sdk.md "How the build gets into the package"). A build writes a stamp
// file into its output folder whose modification time is the moment the build *started*; the output is
// fresh when the stamp exists and no input (file or folder) was modified after it. Folders count because
// adding, removing or renaming a file changes its folder's time, so a deleted source also makes it stale.
// The start time, not the end: a source saved while a build runs makes that build stale.
import { readdirSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export const STAMP = '.build-stamp';

/** The newest modification time (ms) among `inputs` and everything under them; missing inputs are skipped. */
export function newestInput(inputs) {
  let newest = 0;
  let newestPath;
  const visit = (p) => {
    let s;
    try {
      s = statSync(p);
    } catch {
      return;
    }
    if (s.mtimeMs > newest) [newest, newestPath] = [s.mtimeMs, p];
    if (s.isDirectory()) for (const entry of readdirSync(p)) visit(path.join(p, entry));
  };
  for (const input of inputs) visit(input);
  return { mtimeMs: newest, path: newestPath };
}

/** Why `outDir` is stale (a sentence), or undefined when it is fresh. */
export function staleness(outDir, inputs) {
  let stamp;
  try {
    stamp = statSync(path.join(outDir, STAMP)).mtimeMs;
  } catch {
    return `${path.relative(process.cwd(), outDir) || '.'} has no completed build`;
  }
  const newest = newestInput(inputs);
  if (newest.mtimeMs > stamp) return `${path.relative(process.cwd(), newest.path)} changed after the last build`;
  return undefined;
}

/** Marks `outDir` as built from the inputs as they were at `startedMs`. */
export function writeStamp(outDir, startedMs) {
  const file = path.join(outDir, STAMP);
  writeFileSync(file, `built from the sources as they were at ${new Date(startedMs).toISOString()}\n`);
  utimesSync(file, startedMs / 1000, startedMs / 1000);
}
