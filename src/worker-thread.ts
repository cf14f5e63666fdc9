import { Worker } from 'node:worker_threads';

/**
 * Starts the worker thread whose program is the module `name` beside the caller (`callerUrl`, its
 * `import.meta.url`). The compiled service runs the thread's .js file. From the TypeScript sources
 * (tests, benchmarks under tsx) the thread's .ts file needs a TypeScript loader first: tsx's,
 * registered in the thread, as a development dependency only ever loaded then.
 */
export function startThread(callerUrl: string, name: string, workerData: unknown): Worker {
  const fromSources = callerUrl.endsWith('.ts');
  const entry = new URL(`./${name}${fromSources ? '.ts' : '.js'}`, callerUrl);
  if (!fromSources) return new Worker(entry, { workerData });
  const loader = import.meta.resolve('tsx/esm/api');
  const source = `import(${JSON.stringify(loader)}).then(({ register }) => { register(); return import(${JSON.stringify(entry.href)}); });`;
  return new Worker(source, { eval: true, workerData });
}
