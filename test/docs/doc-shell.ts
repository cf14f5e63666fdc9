import { spawn, type ChildProcess } from 'node:child_process';
import { kill } from '../helpers/process.js';
import { until } from '../helpers/until.js';

/** A documented shell block running in bash, with what it printed so far. */
export interface Shell {
  child: ChildProcess;
  stdout: string;
  stderr: string;
  /** The exit status once the shell ended and its output is read. */
  exited: Promise<number | null>;
  /** Waits until stdout+stderr match `pattern` (or the shell ended); returns the match or throws. */
  waitFor(pattern: RegExp, what: string, ms?: number): Promise<RegExpMatchArray>;
  /** Ends the shell's process group (a block's `npm run` has children of its own). */
  stop(): Promise<void>;
}

/**
 * The environment a reader's terminal has, without the test runner's own variables (vitest's, NODE_OPTIONS),
 * plus `extra` (the service's store, for the operator commands).
 */
export function readerEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1', ...extra };
  for (const name of Object.keys(env)) if (name.startsWith('VITEST') || name === 'NODE_OPTIONS' || name === 'TEST') delete env[name];
  return env;
}

/**
 * Runs `script` with `bash -euo pipefail` (a failing line fails the block) as a foreground child in its own
 * process group, so that `stop` reaches what the block started. `input` is typed at its standard input.
 */
export function shell(script: string, o: { cwd: string; env: NodeJS.ProcessEnv; input?: string }): Shell {
  const child = spawn('bash', ['-euo', 'pipefail', '-c', script], {
    cwd: o.cwd,
    env: o.env,
    detached: true,
    stdio: [o.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
  });
  const run: Shell = {
    child,
    stdout: '',
    stderr: '',
    exited: new Promise((done) => child.once('close', (code) => done(code))),
    async waitFor(pattern, what, ms = 60_000) {
      let match: RegExpMatchArray | null = null;
      await until(() => (match = (run.stdout + run.stderr).match(pattern)) !== null || child.exitCode !== null, what, ms);
      if (!match) throw new Error(`the block ended (${child.exitCode}) before ${what}:\n${run.stdout}\n${run.stderr}`);
      return match;
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const gone = kill(child, 'SIGTERM');
      try {
        process.kill(-child.pid!, 'SIGTERM');
      } catch {
        /* the group ended meanwhile */
      }
      await gone;
    },
  };
  child.stdout!.on('data', (chunk: Buffer) => (run.stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (run.stderr += chunk.toString()));
  if (o.input !== undefined) child.stdin!.end(o.input);
  return run;
}
