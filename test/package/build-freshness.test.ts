import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
// @ts-expect-error: a build script in plain JavaScript (scripts/), without declarations
import { STAMP, staleness, writeStamp } from '../../scripts/freshness.mjs';

/**
 * The one quick-start build (docs/sdk.md "How the build gets into the package"): `npm start` and `npm test`
 * build first only when dist/ is stale, and never touch a fresh dist/, from which the suite runs processes
 * in parallel. Times are set explicitly (utimes), so nothing depends on the clock's resolution.
 */
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
type Staleness = (outDir: string, inputs: string[]) => string | undefined;
const stale = staleness as Staleness;
const stamp = writeStamp as (outDir: string, startedMs: number) => void;

let tmp: string;
const T0 = Date.parse('2026-01-01T00:00:00Z');
const at = (file: string, ms: number) => utimesSync(file, ms / 1000, ms / 1000);

beforeEach(() => {
  tmp = mkdtempSync(path.join(tmpdir(), 'tabwire-fresh-'));
  mkdirSync(path.join(tmp, 'src', 'browser'), { recursive: true });
  mkdirSync(path.join(tmp, 'dist'));
  for (const file of ['src/a.ts', 'src/browser/b.ts', 'package.json']) {
    writeFileSync(path.join(tmp, file), '{}');
    at(path.join(tmp, file), T0);
  }
  at(path.join(tmp, 'src', 'browser'), T0);
  at(path.join(tmp, 'src'), T0);
});

afterEach(() => rmSync(tmp, { recursive: true, force: true }));

const inputs = () => [path.join(tmp, 'src'), path.join(tmp, 'package.json')];
const dist = () => path.join(tmp, 'dist');

describe('freshness of a build', () => {
  it('is stale without a completed build, fresh after one, and stale again once any input is newer than its start', () => {
    expect(stale(dist(), inputs())).toMatch(/has no completed build/);
    stamp(dist(), T0 + 1000);
    expect(stale(dist(), inputs())).toBeUndefined();
    // A source saved while the build ran (after it started) leaves that build stale.
    at(path.join(tmp, 'src', 'browser', 'b.ts'), T0 + 1500);
    expect(stale(dist(), inputs())).toBe(`${path.relative(process.cwd(), path.join(tmp, 'src', 'browser', 'b.ts'))} changed after the last build`);
  });

  it('counts a deleted source (its folder changed) and a changed package.json', () => {
    stamp(dist(), T0 + 1000);
    rmSync(path.join(tmp, 'src', 'a.ts')); // the folder's time is now, long after the stamp
    expect(stale(dist(), inputs())).toMatch(/src changed after the last build$/);
    at(path.join(tmp, 'src'), T0);
    expect(stale(dist(), inputs())).toBeUndefined();
    at(path.join(tmp, 'package.json'), T0 + 2000);
    expect(stale(dist(), inputs())).toMatch(/package\.json changed after the last build$/);
  });

  it('is stale when the stamp is gone (a build deletes dist/ first, so a failed build leaves none)', () => {
    stamp(dist(), T0 + 1000);
    rmSync(path.join(dist(), STAMP as string));
    expect(stale(dist(), inputs())).toMatch(/has no completed build/);
  });
});

describe('scripts/build.mjs --if-stale (prestart, pretest)', () => {
  const ifStale = (): Promise<{ code: number; output: string }> =>
    new Promise((resolve) => {
      execFile(process.execPath, [path.join(tmp, 'scripts', 'build.mjs'), '--if-stale'], { cwd: tmp }, (error, stdout, stderr) =>
        resolve({ code: error ? Number(error.code ?? 1) : 0, output: stdout + stderr }),
      );
    });

  beforeEach(() => {
    // The build script and its freshness check in a scratch tree whose only other inputs are the files above.
    mkdirSync(path.join(tmp, 'scripts'));
    for (const file of ['build.mjs', 'freshness.mjs']) {
      copyFileSync(path.join(root, 'scripts', file), path.join(tmp, 'scripts', file));
      at(path.join(tmp, 'scripts', file), T0);
    }
    at(path.join(tmp, 'scripts'), T0);
    writeFileSync(path.join(dist(), 'main.js'), '// built');
  });

  it('leaves a fresh dist/ untouched', async () => {
    stamp(dist(), T0 + 1000);
    const { code, output } = await ifStale();
    expect({ code, output: output.trim() }).toEqual({ code: 0, output: 'dist/ is up to date: no source changed since the last build' });
    expect(existsSync(path.join(dist(), 'main.js'))).toBe(true);
  });

  it('builds a stale dist/, saying why (here the build then fails: the scratch tree has no TypeScript)', async () => {
    stamp(dist(), T0 + 1000);
    at(path.join(tmp, 'src', 'a.ts'), T0 + 2000);
    const { code, output } = await ifStale();
    expect(output).toContain(`building dist/: ${path.join('src', 'a.ts')} changed after the last build`);
    expect(existsSync(path.join(dist(), 'main.js'))).toBe(false);
    expect(existsSync(path.join(dist(), STAMP as string))).toBe(false);
    expect(code).not.toBe(0);
  });
});
