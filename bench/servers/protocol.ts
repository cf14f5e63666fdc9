import type { Measurement } from '../lib/measure/types.js';

/** Messages over the IPC channel between bench/run.ts and a server child (bench/lib/processes/child.ts). */
export type ParentRequest =
  | { type: 'cpu'; id: number }
  /** Measure the reference operation in the child (while it serves nothing), for `ms` after `warmupMs`. */
  | { type: 'reference'; id: number; arg: string; warmupMs: number; ms: number };
export type ChildReply =
  | { type: 'ready'; port: number }
  | { type: 'failed'; message: string }
  | { type: 'cpu'; id: number; micros: number }
  | { type: 'reference'; id: number; measurement?: Measurement; error?: string };

export interface Listening {
  port: number;
  close(): Promise<void>;
}

export interface ChildOptions {
  /**
   * A rate measured inside the server process on request: the server's own core, heap and JIT
   * state, so the parent can compare the server's request rate with it (bench/servers/reference.ts).
   */
  reference?: (arg: string, timing: { warmupMs: number; durationMs: number }) => Measurement;
}

const send = (m: ChildReply): void => {
  process.send?.(m);
};

/**
 * Child side: starts the server, reports its port, answers CPU readings and reference
 * measurements, and shuts down on SIGTERM or when the parent goes away (IPC disconnect), so no
 * server outlives a benchmark.
 */
export async function serveAsChild(start: () => Promise<Listening>, options: ChildOptions = {}): Promise<void> {
  if (!process.send) throw new Error('run this file through bench/run.ts (it needs an IPC channel)');
  let server: Listening | undefined;
  let closing = false;
  const shutdown = async (code: number): Promise<void> => {
    if (closing) return;
    closing = true;
    const force = setTimeout(() => process.exit(code), 3_000);
    force.unref();
    try {
      await server?.close();
    } finally {
      process.exit(code);
    }
  };
  process.once('SIGTERM', () => void shutdown(0));
  process.once('SIGINT', () => void shutdown(0));
  process.once('disconnect', () => void shutdown(0));
  process.on('message', (m: ParentRequest) => {
    if (m.type === 'cpu') {
      const { user, system } = process.cpuUsage();
      send({ type: 'cpu', id: m.id, micros: user + system });
    } else if (m.type === 'reference') {
      if (!options.reference) {
        send({ type: 'reference', id: m.id, error: 'this server has no reference operation' });
        return;
      }
      try {
        const measurement = options.reference(m.arg, { warmupMs: m.warmupMs, durationMs: m.ms });
        send({ type: 'reference', id: m.id, measurement });
      } catch (err) {
        send({ type: 'reference', id: m.id, error: err instanceof Error ? err.message : String(err) });
      }
    }
  });
  try {
    server = await start();
    send({ type: 'ready', port: server.port });
  } catch (err) {
    send({ type: 'failed', message: err instanceof Error ? (err.stack ?? err.message) : String(err) });
    await shutdown(1);
  }
}
