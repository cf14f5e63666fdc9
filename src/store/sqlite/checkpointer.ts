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
// While the main thread holds its connection idle for a TRUNCATE (see Checkpointer), nothing else runs here.
let truncating = false;
const timer = setInterval(() => {
  if (truncating) return;
  try {
    // PASSIVE: copies what it can without waiting for, or blocking, the main connection.
    db.pragma('wal_checkpoint(PASSIVE)');
    // Under writes that never pause, a PASSIVE checkpoint never finds the log fully copied at the moment a
    // write starts, so SQLite never starts the log over and it grows. Past a bound the log is emptied
    // (TRUNCATE) while the main thread keeps its connection idle: asked for here, done on 'truncate'.
    if (walSize() > workerData.truncateBytes) {
      truncating = true;
      parentPort.postMessage('truncate?');
    }
  } catch {
    // SQLITE_BUSY or a closing database: the next run tries again.
  }
}, workerData.everyMs);
parentPort.on('message', (message) => {
  if (message === 'truncate') {
    try {
      // The main connection is idle now; the wait covers another process's reader (a CLI command).
      db.pragma('busy_timeout = 2000');
      db.pragma('wal_checkpoint(TRUNCATE)');
    } catch {
      // Busy or closing: the log is emptied another time.
    } finally {
      db.pragma('busy_timeout = 0');
      truncating = false;
      parentPort.postMessage('truncated');
    }
    return;
  }
  if (message === 'skip') {
    truncating = false;
    return;
  }
  if (message !== 'stop') return;
  clearInterval(timer);
  db.close();
  parentPort.close();
});
`;

/** Runs `work` while the main connection runs nothing else (queries meanwhile wait their turn, asynchronously). */
export type HoldConnection = (work: () => Promise<void>) => Promise<void>;

/**
 * WAL checkpoints off the event loop (docs/store.md "SQLite"): the main connection's automatic
 * checkpoints are turned off (`wal_autocheckpoint = 0`) and a worker thread with its own connection
 * checkpoints every second instead. An automatic checkpoint fsyncs the database file on the thread
 * that happens to commit, which stalled request handling for hundreds of milliseconds on slow disks
 * (docs/benchmarks.md "Callbacks").
 *
 * Emptying the log (TRUNCATE) must have no writer in the way. When the worker ran it against a busy
 * main connection, that connection's next write met SQLITE_BUSY and slept in SQLite's busy handler,
 * which blocks the event loop for as long as the checkpoint takes (docs/benchmarks.md "Waiting
 * people"). So the worker asks, the main thread takes its connection
 * through Kysely's queue (`hold`), and the worker truncates while queries wait without blocking anything.
 */
export class Checkpointer {
  private readonly worker: Worker;
  private readonly exited: Promise<void>;
  /** Resolves the hold of the TRUNCATE under way. */
  private truncated: (() => void) | undefined;
  /** The worker has exited. */
  private gone = false;

  /** `onFailure`: the worker could not run (the caller turns automatic checkpoints back on). */
  constructor(file: string, hold: HoldConnection, onFailure: (err: unknown) => void) {
    const module = createRequire(import.meta.url).resolve('better-sqlite3');
    this.worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { module, file, everyMs: CHECKPOINT_EVERY_MS, truncateBytes: WAL_TRUNCATE_BYTES } });
    this.worker.on('error', onFailure);
    this.worker.on('message', (message) => {
      if (message === 'truncated') this.endHold();
      else if (message === 'truncate?') {
        const truncateWhileHeld = () =>
          new Promise<void>((resolve) => {
            // The hold may come after the worker stopped (the store closing): nobody would end it.
            if (this.gone) return resolve();
            this.truncated = resolve;
            this.worker.postMessage('truncate');
          });
        // No hold (the store is closing): the worker goes back to its PASSIVE runs.
        hold(truncateWhileHeld).catch(() => this.worker.postMessage('skip'));
      }
    });
    this.worker.unref();
    this.exited = new Promise((resolve) =>
      this.worker.once('exit', () => {
        // A hold must never outlive the worker that would end it.
        this.gone = true;
        this.endHold();
        resolve();
      }),
    );
  }

  private endHold(): void {
    const end = this.truncated;
    this.truncated = undefined;
    end?.();
  }

  /** Closes the worker's connection (before the main one, whose close then checkpoints and removes the WAL). */
  async stop(): Promise<void> {
    // Kept alive until it has closed its connection (unref'd while running, so it never holds a process open).
    this.worker.ref();
    this.worker.postMessage('stop');
    await this.exited;
  }
}
