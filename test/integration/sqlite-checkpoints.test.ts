import { spawn } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, expect, it } from 'vitest';
import { WAL_FILE_LIMIT_BYTES } from '../../src/store/sqlite/checkpointer.js';
import { openSqliteStore } from '../../src/store/sqlite/open.js';
import type { LoginCode } from '../../src/store/stores.js';
import { assertFreshBuild } from '../helpers/process.js';
import { until } from '../helpers/until.js';

const dir = mkdtempSync(join(tmpdir(), 'tabwire-checkpoints-'));

/** A pending code as a QR request stores it; `purpose` sets how much each insert writes. */
const pendingCode = (code: string, purpose: string, now: number): LoginCode => ({
  code,
  tabId: 'tab-00000001',
  sessionHash: null,
  origin: null,
  purpose,
  propertyFilter: null,
  attachmentFilter: null,
  serviceId: '',
  agentApiTimeout: null,
  nonce: 'n'.repeat(32),
  createdAt: now,
  expiresAt: now + 300_000,
  state: 'pending',
  legalId: null,
  signedAt: null,
  scanSeconds: null,
  fetchedAt: null,
  bindingHash: null,
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it('WAL checkpoints happen in the worker: the database file takes what was written without any commit doing it', async () => {
  const file = join(dir, 'store.sqlite');
  const store = await openSqliteStore(file);
  const before = statSync(file).size;
  const now = Date.now();
  for (let i = 0; i < 2_000; i++) {
    await store.codes.insert(pendingCode(`code-${i}`.padEnd(22, 'x'), 'a purpose long enough to fill pages '.repeat(4), now));
  }
  // Automatic checkpoints are off on the connection that wrote: only the worker moves pages into the file.
  await until(() => statSync(file).size > before + 100_000, 'the worker to checkpoint the WAL into the database file');
  await store.close();
  // The last connection to close checkpoints the rest and removes the WAL.
  expect(() => statSync(`${file}-wal`)).toThrow();
});

it('under writes that never pause, the log starts over again and again, no write fails, and its file is cut back to its bound', async () => {
  const file = join(dir, 'restart.sqlite');
  const store = await openSqliteStore(file);
  const walSize = (): number => {
    try {
      return statSync(`${file}-wal`).size;
    } catch {
      return 0;
    }
  };
  /** The log header's checkpoint sequence number (bytes 12-15, big-endian): it goes up each time the log starts over. */
  const restarts = (): number => {
    const header = Buffer.alloc(32);
    const fd = openSync(`${file}-wal`, 'r');
    try {
      readSync(fd, header, 0, 32, 0);
    } finally {
      closeSync(fd);
    }
    return header.readUInt32BE(12);
  };
  const now = Date.now();
  let n = 0;
  // Random keys and long rows: each insert adds several KB to the log, so the 32 MiB bound comes soon.
  // A failed write rejects here.
  const writeBatch = () =>
    Promise.all(
      Array.from({ length: 20 }, (_, k) =>
        store.codes.insert(pendingCode(`${Math.random().toString(36).slice(2)}${n++}-${k}`.padEnd(22, 'x').slice(0, 22), 'p'.repeat(2_000), now)),
      ),
    );
  for (let batches = 0; walSize() <= 32 * 1024 * 1024 && batches < 5_000; batches++) await writeBatch();
  expect(walSize()).toBeGreaterThan(32 * 1024 * 1024);
  const before = restarts();
  // The worker looks at the log once a second: writes go on, a batch at a time, while it makes the log start over.
  await until(async () => {
    await writeBatch();
    return restarts() >= before + 2;
  }, 'the log to start over twice while writes go on', 60_000);
  // The first commit after a restart cuts a file that grew past the bound back to it.
  await until(async () => {
    await writeBatch();
    return walSize() <= WAL_FILE_LIMIT_BYTES;
  }, 'the log file to be cut back to its bound', 60_000);
  await store.close();
}, 120_000);

it('a store closing while a checkpoint hold ends keeps its process alive until the worker has closed (regression: a process with nothing else to do exited first, exit code 13)', async () => {
  // The order that broke: the worker asks for a hold, the hold starts, and `stop` is called before the
  // worker's "checkpointed" arrives; its arrival unref'd the worker that `stop` had just ref'd, so a process
  // whose only handle was the worker ended with the stop still awaited. Run where nothing else keeps the loop alive.
  assertFreshBuild();
  const file = join(dir, 'stop-during-hold.sqlite');
  const checkpointer = pathToFileURL(join(process.cwd(), 'dist/store/sqlite/checkpointer.js')).href;
  const sqliteModule = pathToFileURL(createRequire(import.meta.url).resolve('better-sqlite3')).href;
  // A file, not `--input-type=module -e`: workers inherit that flag, and the checkpointer's is CommonJS.
  const scriptFile = join(dir, 'stop-during-hold.mjs');
  writeFileSync(scriptFile, `
    import SQLite from ${JSON.stringify(sqliteModule)};
    import { Checkpointer } from ${JSON.stringify(checkpointer)};
    const file = ${JSON.stringify(file)};
    const db = new SQLite(file);
    db.pragma('journal_mode = WAL');
    db.pragma('wal_autocheckpoint = 0');
    db.exec('create table t (x text)');
    db.prepare('insert into t values (?)').run('x'.repeat(20000));
    let stopped;
    const asked = new Promise((resolve) => {
      const cp = new Checkpointer(file, (work) => {
        const held = work();
        stopped = cp.stop();
        resolve();
        return held;
      }, (err) => { console.error('worker failed', err); process.exit(2); }, { everyMs: 10, restartBytes: 1 });
    });
    // Alive until the worker asks (it is unref'd while it runs); from then on only the stopping worker is.
    const alive = setInterval(() => undefined, 1000);
    await asked;
    clearInterval(alive);
    await stopped;
    db.close();
    console.log('closed');
  `);
  const child = spawn(process.execPath, [scriptFile], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  expect({ code, out: out.trim() }).toEqual({ code: 0, out: 'closed' });
});
