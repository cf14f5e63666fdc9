import { spawn, type ChildProcess } from 'node:child_process';

/** Starts the built service (`dist/main.js`) as a foreground child with the given environment. */
export async function startProcess(env: NodeJS.ProcessEnv, baseUrl: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['dist/main.js'], { env: { PATH: process.env.PATH, ...env }, stdio: ['ignore', 'inherit', 'inherit'] });
  const deadline = Date.now() + 15_000;
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
