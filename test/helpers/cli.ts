import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { assertFreshBuild } from './process.js';
import { until } from './until.js';

/** The built CLI, run as an operator runs it (`npm test` builds first). */
export const CLI = 'dist/cli/main.js';

/** A running `tabwire` process with what it printed so far. */
export interface CliRun {
  child: ChildProcess;
  stdout: string;
  stderr: string;
  /** Resolves with the exit status when the process has ended and its output is read. */
  exited: Promise<number | null>;
  /** Waits until stderr (or stdout) matches `pattern`; returns the match. */
  waitFor(pattern: RegExp, stream?: 'stderr' | 'stdout', ms?: number): Promise<RegExpMatchArray>;
  /** Writes to stdin and closes it. */
  answer(text: string): void;
}

/**
 * Starts `tabwire ...args`. `stdin: 'ignore'` gives it /dev/null (input ends at once); `'pipe'` lets the
 * test answer (`answer`). The environment is only PATH plus `env`, so nothing from the test run leaks in.
 */
export function startCli(args: string[], o: { env?: NodeJS.ProcessEnv; stdin?: 'ignore' | 'pipe'; cwd?: string } = {}): CliRun {
  assertFreshBuild();
  const child = spawn(process.execPath, [resolve(CLI), ...args], {
    env: { PATH: process.env.PATH, ...o.env },
    stdio: [o.stdin ?? 'ignore', 'pipe', 'pipe'],
    ...(o.cwd === undefined ? {} : { cwd: o.cwd }),
  });
  const run: CliRun = {
    child,
    stdout: '',
    stderr: '',
    exited: new Promise((resolve, reject) => {
      child.once('error', reject);
      child.once('close', (code) => resolve(code));
    }),
    async waitFor(pattern, stream = 'stderr', ms = 20_000) {
      let match: RegExpMatchArray | null = null;
      await until(
        () => (match = run[stream].match(pattern)) !== null || child.exitCode !== null,
        `tabwire ${args[0]} to print ${pattern}`,
        ms,
      );
      if (!match) throw new Error(`tabwire ${args[0]} exited with ${child.exitCode} before printing ${pattern}: ${run.stderr}`);
      return match;
    },
    answer(text) {
      child.stdin!.end(text);
    },
  };
  child.stdout!.on('data', (chunk: Buffer) => (run.stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (run.stderr += chunk.toString()));
  return run;
}

/** Runs `tabwire ...args` to its end. */
export async function runCli(args: string[], o: { env?: NodeJS.ProcessEnv; stdin?: 'ignore' | 'pipe'; input?: string; cwd?: string } = {}) {
  const run = startCli(args, { ...o, stdin: o.input === undefined ? o.stdin : 'pipe' });
  if (o.input !== undefined) run.answer(o.input);
  const status = await run.exited;
  return { status, stdout: run.stdout, stderr: run.stderr };
}
