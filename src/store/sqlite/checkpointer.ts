import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/** How often the worker checkpoints the WAL (each one copies what the writer added since the last). */
const CHECKPOINT_EVERY_MS = 1_000;
/** A WAL larger than this is emptied (TRUNCATE checkpoint), which briefly holds the writer. */
const WAL_TRUNCATE_BYTES = 32 * 1024 * 1024;

/**
 * The worker's program. A constant of this module, never anything received: it is given to the Worker
 * as source (`eval: true`) so that the same code runs from the compiled service and from the
 * TypeScript sources under test, where a worker file would need a TypeScript loader. CommonJS, so it
 * loads better-sqlite3 by the path resolved here. workerData: { module, file, everyMs, truncateBytes }.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const SQLite = require(workerData.module);
const db = new SQLite(workerData.file);
// Never wait for the writer: a checkpoint that meets a busy database is simply tried again next time.
db.pragma('busy_timeout = 0');
const { statSync } = require('node:fs');
const walSize = () => {
  try {
    return statSync(workerData.file + '-wal').size;
  } catch {
    return 0;
  }
};
const timer = setInterval(() => {
  try {
    // PASSIVE: copies what it can without waiting for, or blocking, the main connection.
    db.pragma('wal_checkpoint(PASSIVE)');
    // Under writes that never pause, a PASSIVE checkpoint never finds the log fully copied at the moment a
    // write starts, so SQLite never starts the log over and it grows. Past a bound, TRUNCATE waits for the
    // writer's current transaction, copies the little the last PASSIVE run left, and empties the log: a
    // short pause for the writer, now and then, instead of a log without end.
    if (walSize() > workerData.truncateBytes) {
      db.pragma('busy_timeout = 2000');
      try {
        db.pragma('wal_checkpoint(TRUNCATE)');
      } finally {
        db.pragma('busy_timeout = 0');
      }
    }
  } catch {
    // SQLITE_BUSY or a closing database: the next run tries again.
  }
}, workerData.everyMs);
parentPort.on('message', (message) => {
  if (message !== 'stop') return;
  clearInterval(timer);
  db.close();
  parentPort.close();
});
`;

/**
 * WAL checkpoints off the event loop (docs/store.md "SQLite"): the main connection's automatic
 * checkpoints are turned off (`wal_autocheckpoint = 0`) and a worker thread with its own connection
 * checkpoints every second instead. An automatic checkpoint fsyncs the database file on the thread
 * that happens to commit, which stalled request handling for hundreds of milliseconds on slow disks
 * (docs/benchmarks.md "Callbacks").
 */
export class Checkpointer {
  private readonly worker: Worker;
  private readonly exited: Promise<void>;

  /** `onFailure`: the worker could not run (the caller turns automatic checkpoints back on). */
  constructor(file: string, onFailure: (err: unknown) => void) {
    const module = createRequire(import.meta.url).resolve('better-sqlite3');
    this.worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { module, file, everyMs: CHECKPOINT_EVERY_MS, truncateBytes: WAL_TRUNCATE_BYTES } });
    this.worker.on('error', onFailure);
    this.worker.unref();
    this.exited = new Promise((resolve) => this.worker.once('exit', () => resolve()));
  }

  /** Closes the worker's connection (before the main one, whose close then checkpoints and removes the WAL). */
  async stop(): Promise<void> {
    // Kept alive until it has closed its connection (unref'd while running, so it never holds a process open).
    this.worker.ref();
    this.worker.postMessage('stop');
    await this.exited;
  }
}
