import { spawn, type ChildProcess } from 'node:child_process';
import { connect } from 'node:net';
import { freePort } from './service.js';

/** A private `redis-server` on loopback, a foreground child of the test process (no persistence). */
export interface RedisServer {
  url: string;
  port: number;
  /** SIGTERM, wait for exit, start again on the same port (everything in it is lost). */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

async function waitForPort(port: number, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`redis-server exited with ${child.exitCode}`);
    const ok = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1', () => {
        socket.end();
        resolve(true);
      });
      socket.on('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error('redis-server did not start');
    await new Promise((r) => setTimeout(r, 50));
  }
}

function launch(port: number): ChildProcess {
  return spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
}

async function kill(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  await new Promise<void>((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

export async function startRedis(): Promise<RedisServer> {
  const port = await freePort();
  let child = launch(port);
  await waitForPort(port, child);
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    async restart() {
      await kill(child);
      child = launch(port);
      await waitForPort(port, child);
    },
    async stop() {
      await kill(child);
    },
  };
}
