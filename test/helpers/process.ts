import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** What the process tests run; `npm test` builds it first when a source changed (`pretest`: `scripts/build.mjs --if-stale`). */
const BUILT = ['dist/main.js', 'dist/cli/main.js', 'dist/public/Events.js'];

function newestSource(dir: string): { file: string; mtimeMs: number } {
  let newest = { file: dir, mtimeMs: 0 };
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const file = join(dir, entry.name);
    const candidate = entry.isDirectory() ? newestSource(file) : { file, mtimeMs: statSync(file).mtimeMs };
    if (candidate.mtimeMs > newest.mtimeMs) newest = candidate;
  }
  return newest;
}

/**
 * Refuses to run a process test against a build older than the sources, so a stale `dist/` can make
 * no process test pass or fail (`npx vitest run` does not build; `npm test` does).
 */
export function assertFreshBuild(): void {
  const source = newestSource('src');
  for (const built of BUILT) {
    let mtimeMs: number;
    try {
      mtimeMs = statSync(built).mtimeMs;
    } catch {
      throw new Error(`${built} is missing: run \`npm run build\` (\`npm test\` does it first)`);
    }
    if (mtimeMs < source.mtimeMs) throw new Error(`${built} is older than ${source.file}: run \`npm run build\` (\`npm test\` does it first)`);
  }
}

/** Starts the built service (`dist/main.js`) as a foreground child with the given environment. */
export async function startProcess(env: NodeJS.ProcessEnv, baseUrl: string): Promise<ChildProcess> {
  assertFreshBuild();
  const child = spawn(process.execPath, ['dist/main.js'], { env: { PATH: process.env.PATH, ...env }, stdio: ['ignore', 'inherit', 'inherit'] });
  // Bounds a broken start only: on a loaded 2-core machine a start (imports, migrations) took over 15 s.
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`service exited with ${child.exitCode}`);
    try {
      if ((await fetch(`${baseUrl}/healthz`)).ok) return child;
    } catch {
      /* not listening yet */
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error('service did not start');
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Kills a child and waits for it to be gone. */
export function kill(child: ChildProcess, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill(signal);
  });
}
