import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/** How often the worker checkpoints the WAL (each one copies what the writer added since the last). */
const CHECKPOINT_EVERY_MS = 1_000;
/** A log longer than this is made to start over (see Checkpointer), which briefly holds the writer. */
const WAL_RESTART_BYTES = 32 * 1024 * 1024;
/**
 * The log file keeps its size when the log starts over, and is written again from its beginning. After
 * a burst left it larger than this, the first commit after a restart cuts it back (`journal_size_limit`),
 * so the file stays bounded; the bound is above the usual high-water mark (the restart bound plus about a
 * second of writes), so that cut is rare.
 */
export const WAL_FILE_LIMIT_BYTES = 2 * WAL_RESTART_BYTES;

/**
 * The worker's program. A constant of this module, never anything received: it is given to the Worker
 * as source (`eval: true`) so that the same code runs from the compiled service and from the
 * TypeScript sources under test, where a worker file would need a TypeScript loader. CommonJS, so it
 * loads better-sqlite3 by the path resolved here. workerData: { module, file, everyMs, restartBytes }.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const SQLite = require(workerData.module);
const db = new SQLite(workerData.file);
// Never wait for the writer: a checkpoint that meets a busy database is simply tried again next time.
db.pragma('busy_timeout = 0');
// A log frame is a page and its 24-byte header.
const restartFrames = Math.floor(workerData.restartBytes / (db.pragma('page_size', { simple: true }) + 24));
// While the main thread holds its connection idle for a checkpoint (see Checkpointer), nothing else runs here.
let holding = false;
const timer = setInterval(() => {
  if (holding) return;
  try {
    // PASSIVE: copies what it can without waiting for, or blocking, the main connection; it answers how
    // many frames the log holds.
    const [{ log }] = db.pragma('wal_checkpoint(PASSIVE)');
    // The writer starts the log over only when a write begins with every frame copied. Under writes that
    // never pause, new frames always arrive while a checkpoint copies, so the log grows. Past a bound,
    // one checkpoint runs while the main thread keeps its connection idle: asked for here, done on
    // 'checkpoint', and the next write starts the log over. A second run first copies what came during
    // this one, so the one under the hold has only the last few milliseconds' frames to copy.
    if (log > restartFrames) {
      db.pragma('wal_checkpoint(PASSIVE)');
      holding = true;
      parentPort.postMessage('checkpoint?');
    }
  } catch {
    // SQLITE_BUSY or a closing database: the next run tries again.
  }
}, workerData.everyMs);
parentPort.on('message', (message) => {
  if (message === 'checkpoint') {
    try {
      // The main connection is idle now; the wait covers another process's reader (a CLI command).
      db.pragma('busy_timeout = 2000');
      db.pragma('wal_checkpoint(PASSIVE)');
    } catch {
      // Busy or closing: the log starts over another time.
    } finally {
      db.pragma('busy_timeout = 0');
      holding = false;
      parentPort.postMessage('checkpointed');
    }
    return;
  }
  if (message === 'skip') {
    holding = false;
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
 * (docs/benchmarks.md#sqlite-checkpoints).
 *
 * Starting the log over needs one checkpoint that copies every frame with no write in between. So the
 * worker asks, the main thread takes its connection through Kysely's queue (`hold`), the worker
 * checkpoints while queries wait without blocking anything, and the next write starts the log from
 * its beginning. The file keeps its size (bounded by the restart bound plus a second of writes) and
 * is reused. An earlier version emptied the file with a TRUNCATE checkpoint instead: its hold grew
 * with the file (15-30 ms at 32 MiB, 40-65 ms at 128 MiB, every few seconds under 6,000 codes a
 * second), and every query waited that long (docs/benchmarks.md#sqlite-checkpoints).
 */
export class Checkpointer {
  private readonly worker: Worker;
  private readonly exited: Promise<void>;
  /** Resolves the hold of the checkpoint under way. */
  private checkpointed: (() => void) | undefined;
  /** The worker has exited. */
  private gone = false;
  /** `stop` was called: the worker stays ref'd until it has exited, whatever a hold ending meanwhile does. */
  private stopping = false;

  /**
   * `onFailure`: the worker could not run (the caller turns automatic checkpoints back on). `timing`: how
   * often it checkpoints and the log length it restarts past (tests make both small).
   */
  constructor(file: string, hold: HoldConnection, onFailure: (err: unknown) => void, timing: { everyMs: number; restartBytes: number } = { everyMs: CHECKPOINT_EVERY_MS, restartBytes: WAL_RESTART_BYTES }) {
    const module = createRequire(import.meta.url).resolve('better-sqlite3');
    this.worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { module, file, ...timing } });
    this.worker.on('error', onFailure);
    this.worker.on('message', (message) => {
      if (message === 'checkpointed') this.endHold();
      else if (message === 'checkpoint?') {
        const checkpointWhileHeld = () =>
          new Promise<void>((resolve) => {
            // The hold may come after the worker stopped (the store closing): nobody would end it.
            if (this.gone) return resolve();
            this.checkpointed = resolve;
            // Queries wait for this hold: while it lasts, the worker keeps the process alive (it is unref'd
            // otherwise), or a process with nothing else to do would exit with those queries unsettled.
            this.worker.ref();
            this.worker.postMessage('checkpoint');
          });
        // No hold (the store is closing): the worker goes back to its PASSIVE runs.
        hold(checkpointWhileHeld).catch(() => this.worker.postMessage('skip'));
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
    const end = this.checkpointed;
    this.checkpointed = undefined;
    // Once stopping, the worker stays ref'd: a hold that ends while `stop` waits for the exit (its answer was
    // already on the way) must not let a process with nothing else to do end before the worker closed.
    if (end && !this.gone && !this.stopping) this.worker.unref();
    end?.();
  }

  /** Closes the worker's connection (before the main one, whose close then checkpoints and removes the WAL). */
  async stop(): Promise<void> {
    // Kept alive until it has closed its connection (unref'd while running, so it never holds a process open).
    this.stopping = true;
    this.worker.ref();
    this.worker.postMessage('stop');
    await this.exited;
  }
}
