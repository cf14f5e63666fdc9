/**
 * The one registry of the child processes the benchmarks start: server children (child.ts) and
 * load-generating workers (channel-worker.ts) are both spawned and stopped here, so a single set of
 * exit hooks, installed when this module is first imported, kills whichever of them still runs.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { ensureBuilt, runsBuiltCode } from './shipped-build.js';

// tsx's loader, so a child runs TypeScript the way `tsx bench/run.ts` runs this process, without
// going through the tsx CLI (which would put another process between us and the server).
const tsxLoader = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
// Then src/ from its build in dist/ (shipped-code-hooks.mjs), unless BENCH_CODE=src.
const shippedCode = new URL('./shipped-code.mjs', import.meta.url).href;

const live = new Set<ChildProcess>();

function killAllSync(): void {
  for (const child of live) {
    if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) {
      try {
        process.kill(child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }
  live.clear();
}

// Children must never outlive the benchmark, whether it ends normally, throws or is interrupted.
process.once('exit', killAllSync);
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    killAllSync();
    process.exit(signal === 'SIGINT' ? 130 : 143);
  });
}

const exited = (child: ChildProcess): boolean => child.exitCode !== null || child.signalCode !== null;

function waitExit(child: ChildProcess, ms: number): Promise<boolean> {
  if (exited(child)) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      child.off('exit', onExit);
      resolve(false);
    }, ms);
    const onExit = (): void => {
      clearTimeout(timer);
      resolve(true);
    };
    child.once('exit', onExit);
  });
}

/**
 * Runs the TypeScript file `entry` in a new node process (with `nodeArgs` before it and `args`
 * after it), stdout and stderr shared with this one, an IPC channel open, and registered so that
 * it is killed when this process ends. The modules of src/ it imports run as built in dist/ (built
 * first if src/ changed). A failed spawn leaves `pid` undefined.
 */
export function spawnTracked(entry: URL, args: readonly string[], nodeArgs: readonly string[] = []): ChildProcess {
  ensureBuilt();
  const built = runsBuiltCode() ? ['--import', shippedCode] : [];
  const child = spawn(process.execPath, [...nodeArgs, '--import', tsxLoader, ...built, fileURLToPath(entry), ...args], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  live.add(child);
  child.once('exit', () => live.delete(child));
  return child;
}

/** SIGTERM by pid, SIGKILL if it has not exited after a grace period. Idempotent. */
export async function stopTracked(child: ChildProcess): Promise<void> {
  const pid = child.pid;
  if (pid === undefined || exited(child)) return;
  try {
    process.kill(pid, 'SIGTERM');
  } catch {
    return;
  }
  if (!(await waitExit(child, 5_000))) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // exited meanwhile
    }
    await waitExit(child, 5_000);
  }
  live.delete(child);
}
