/**
 * Store writes on PostgreSQL, group commit against plain pooled writes (docs/store.md "Group commit"), and plain
 * writes sent unnamed (docs/store.md "Prepared statements"):
 * the two hot-path writes (a QR code insert; a backend-mode settlement, which settles a code and stores its
 * callback in one transaction) and a whole login's statements (a derived code's row at its first fetch, the
 * code and the identity read together for the signature, the settlement, the published mark written with others as a
 * node does) from C concurrent callers, through the real SqlCodeStore opened as a node opens it, on a private
 * PostgreSQL 15 with fsync on, once with the outbox writes group-committed (one transaction per batch on one
 * pooled connection) and once without (each write on its own connection of the pool). Rounds of the two
 * modes alternate; rates are medians, with PostgreSQL's CPU per write. PostgreSQL runs on the same 2 cores as
 * this process.
 */
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { postgresFlavour } from '../src/store/postgres/flavour.js';
import { migrateLocked } from '../src/store/postgres/migrate-lock.js';
import { postgresQueryBuilder } from '../src/store/postgres/open.js';
import { createSqlStore } from '../src/store/sql/sql-store.js';
import { PublishedMarks } from '../src/quicklogin/published-marks.js';
import type { Identity, LoginCode, Store } from '../src/store/stores.js';
import { startPostgres } from '../test/helpers/postgres.js';
import { machineLine, revision } from './lib/common.js';
import { postmasterPid } from './lib/processes/postgres.js';
import { TreeCpu } from './lib/measure/proc-cpu.js';
import { formatRate, percentile, table } from './lib/measure/stats.js';
import { backgroundLoad } from './lib/measure/sysload.js';
import type { BenchReport, Benchmark, Measurement } from './lib/measure/types.js';

const ROUND_MS = 2_000;
const ROUNDS = 3;
const CONCURRENCY = [1, 16, 64] as const;
/** Which writes run (BENCH_STORE_WRITES=login or a comma-separated list: only those; unset: all). */
const OPS = (['code insert', 'settle + callback', 'login', 'login (marks at once)', 'qr request', 'register', 'arrivals + logins'] as const).filter((op) => {
  const only = process.env.BENCH_STORE_WRITES;
  return only === undefined || only === '' || only.split(',').includes(op);
});
const POOL_SIZE = 10;
const NOW = 1_700_000_000_000;

/**
 * 'group commit' and 'plain' send statements as nodes do, named (prepared once per connection); 'plain, unnamed'
 * as with `databasePreparedStatements: false` (each statement parsed and planned at every call), which is
 * what this benchmark measured until 2026-11-29.
 */
const MODES = ['group commit', 'plain', 'plain, unnamed'] as const;
type Mode = (typeof MODES)[number];
type Op = 'code insert' | 'settle + callback' | 'login' | 'login (marks at once)' | 'qr request' | 'register' | 'arrivals + logins';

const code = (id: string, serviceId: string): LoginCode => ({
  code: id, tabId: 'tab-12345678', sessionHash: 'h'.repeat(43), origin: 'https://app.example', purpose: 'Log in to the bench', propertyFilter: null,
  attachmentFilter: null, serviceId, agentApiTimeout: null, nonce: randomBytes(16).toString('base64url'), createdAt: NOW,
  expiresAt: NOW + 300_000, state: 'pending', legalId: null, signedAt: null, scanSeconds: null, fetchedAt: null, bindingHash: null,
});

/** A store opened as a node opens it (pool, prepared statements), with or without group commit. */
async function openStore(url: string, mode: Mode): Promise<Store> {
  const db = postgresQueryBuilder(url, { size: POOL_SIZE, preparedStatements: mode !== 'plain, unnamed' });
  await migrateLocked(db);
  return createSqlStore(db, { ...postgresFlavour, groupCommit: mode === 'group commit' }, () => db.destroy());
}

/** What one row's rate and µs count. */
const UNITS: Record<Op, string> = {
  'code insert': 'write', 'settle + callback': 'write', login: 'login', 'login (marks at once)': 'login', 'qr request': 'request', register: 'Register', 'arrivals + logins': 'login (with 2 arrivals)',
};

/** The identity every bench login signs with. */
const IDENTITY: Identity = {
  id: 'legal@bench', provider: 'bench', state: 'Approved', created: NOW, updated: NOW, from: NOW, to: NOW + 86_400_000,
  properties: { FIRST: 'Ada' }, attachments: [], clientKeyName: 'ed25519', clientPubKey: Buffer.alloc(32, 7).toString('base64'), accountId: null,
};
/** The published marks' window on a node (src/wiring/quicklogin.ts). */
const MARK_WINDOW_MS = 500;

/**
 * One browser-mode login's statements, in the order a node runs them: the code's row at the signing app's
 * first fetch, then for the signature the code and the identity read at once, the settlement with the tab's
 * event, and the mark (written with others by `marks`).
 */
async function login(store: Store, marks: PublishedMarks): Promise<void> {
  const row = { ...code(nextId(), ''), tabId: 'tab-12345678' };
  if (!(await store.codes.insertIfAbsent(row))) throw new Error(`the row of ${row.code} existed`);
  const [read, identity] = await Promise.all([store.codes.get(row.code), store.identities.get(IDENTITY.id)]);
  if (!read || !identity) throw new Error('the code or the identity was not read');
  const tabEvent = { type: 'SignatureReceived', data: { Id: identity.id, Purpose: read.purpose } };
  if (!(await store.codes.settle(row.code, { state: 'approved', legalId: identity.id, now: NOW + 1, tabEvent }))) throw new Error(`settlement of ${row.code} lost`);
  marks.add(row.code);
}

let serial = 0;
let requestIds = 0;

/** A tab's first QR request as the node holding the tab stores it (later refreshes derive codes from it without a write). */
async function qrRequest(store: Store): Promise<void> {
  const stored = await store.qrRequests.insertIfAbsent({
    id: ++requestIds * 7919 + Math.floor(Math.random() * 7919), kid: 'k1', tabId: 'tab-12345678', sessionHash: 'h'.repeat(43), origin: 'https://app.example',
    purpose: 'Log in to the bench', propertyFilter: null, attachmentFilter: null, serviceId: '', agentApiTimeout: null, scanSeconds: null,
    validityMs: 300_000, createdAt: NOW, expiresAt: NOW + 3_600_000,
  });
  if (!stored) throw new Error('a QR request id collided');
}

/** A new tab's Register: its binding, and the results settled for it lately (the replay). */
async function register(store: Store): Promise<void> {
  const tabId = `t${nextId()}`;
  const bound = await store.tabs.bind(tabId, 'h'.repeat(43), NOW, 'https://app.example');
  if (bound !== 'created') throw new Error(`tab ${tabId} was bound before (${bound})`);
  await store.codes.recentTabEvents(tabId, 'h'.repeat(43), NOW - 60_000);
}

/**
 * The capacity estimate's mix (docs/capacity-estimate.md): per login, two tabs arrive (a Register and a
 * first QR request each), as 8,333 arrivals and 4,167 logins a second do.
 */
async function arrivalsAndLogins(store: Store, marks: PublishedMarks): Promise<void> {
  await login(store, marks);
  for (let i = 0; i < 2; i++) {
    await register(store);
    await qrRequest(store);
  }
}
const nextId = () => `b${(serial++).toString(36)}-${randomBytes(6).toString('hex')}`;

interface RoundResult {
  rate: number;
  p50: number;
  p99: number;
  /** PostgreSQL's CPU (postmaster and backends) per write, µs. */
  pgMicros: number;
}

/** C callers doing `op` back to back for ROUND_MS; ops/s, latency percentiles and PostgreSQL's CPU per write. */
async function round(store: Store, op: Op, concurrency: number, pgCpu: TreeCpu): Promise<RoundResult> {
  const marks = new PublishedMarks({ codes: store.codes, clock: { now: () => NOW + 2 }, log: console }, op === 'login (marks at once)' ? 0 : MARK_WINDOW_MS);
  // Settlements need pending codes: made before the clock starts.
  const pending: string[] = [];
  if (op === 'settle + callback') {
    const want = 8_000;
    for (let i = 0; i < want; i += 500) {
      await Promise.all(Array.from({ length: 500 }, () => {
        const id = nextId();
        pending.push(id);
        return store.codes.insert(code(id, 'svc'));
      }));
    }
  }
  const latencies: number[] = [];
  const cpuBefore = pgCpu.read();
  const end = performance.now() + ROUND_MS;
  const start = performance.now();
  const worker = async () => {
    while (performance.now() < end) {
      const t = performance.now();
      if (op === 'code insert') await store.codes.insert(code(nextId(), ''));
      else if (op === 'login' || op === 'login (marks at once)') await login(store, marks);
      else if (op === 'qr request') await qrRequest(store);
      else if (op === 'register') await register(store);
      else if (op === 'arrivals + logins') await arrivalsAndLogins(store, marks);
      else {
        const id = pending.pop();
        if (id === undefined) return;
        const cb = { id: `msg_${id}`, serviceId: 'svc', tabId: '', tabSession: null, url: 'https://backend.example/cb', body: '{}', webhookSecret: null,
          state: 'pending' as const, attempts: 0, nextAttemptAt: NOW, deadline: NOW + 3_600_000, lastError: null, createdAt: NOW, deliveredAt: null };
        const won = await store.codes.settle(id, { state: 'approved', legalId: 'legal@bench', now: NOW + 1, callback: { callback: cb, leaseUntil: NOW + 60_000 } });
        if (!won) throw new Error(`settlement of ${id} lost`);
      }
      latencies.push(performance.now() - t);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  // The round's last marks are its cost too.
  await marks.flush();
  const ms = performance.now() - start;
  const pgMicros = (pgCpu.read() - cpuBefore) / latencies.length;
  return { rate: (latencies.length / ms) * 1000, p50: percentile(latencies, 50), p99: percentile(latencies, 99), pgMicros };
}

export const storeWrites: Benchmark = {
  name: 'store-writes',
  description: 'PostgreSQL hot-path writes: group commit vs plain pooled writes, named and unnamed statements',
  async run(): Promise<BenchReport> {
    const idle = await backgroundLoad();
    const server = await startPostgres({ fsync: true });
    const measurements: Measurement[] = [];
    const rows: string[][] = [];
    try {
      const stores = {} as Record<Mode, Store>;
      for (const mode of MODES) stores[mode] = await openStore(await server.createDatabase(), mode);
      const pgCpu = new TreeCpu(await postmasterPid(server.adminUrl));
      for (const store of Object.values(stores)) await store.identities.insert(IDENTITY);
      for (const op of OPS) {
        for (const concurrency of CONCURRENCY) {
          const results = Object.fromEntries(MODES.map((m) => [m, [] as RoundResult[]])) as Record<Mode, RoundResult[]>;
          for (let r = 0; r < ROUNDS; r++) {
            // Each round in another order, so no mode always follows the same one.
            for (let i = 0; i < MODES.length; i++) {
              const mode = MODES[(i + r) % MODES.length]!;
              results[mode].push(await round(stores[mode], op, concurrency, pgCpu));
            }
          }
          for (const mode of MODES) {
            const rate = percentile(results[mode].map((x) => x.rate), 50);
            const p50 = percentile(results[mode].map((x) => x.p50), 50);
            const p99 = percentile(results[mode].map((x) => x.p99), 50);
            const pgMicros = percentile(results[mode].map((x) => x.pgMicros), 50);
            rows.push([op, String(concurrency), mode, formatRate(rate), p50.toFixed(2), p99.toFixed(2), pgMicros.toFixed(0)]);
            measurements.push({
              key: `${op}.${concurrency}.${mode}`,
              label: `${op}, ${concurrency} callers, ${mode}`,
              rate,
              unit: UNITS[op],
              count: Math.round((rate * ROUND_MS * ROUNDS) / 1000),
              windowMs: ROUND_MS * ROUNDS,
              latencyMs: { p50, p99, max: Math.max(...results[mode].map((x) => x.p99)) },
            });
          }
        }
      }
      await Promise.all(Object.values(stores).map((s) => s.close()));
    } finally {
      await server.stop();
    }
    return {
      title: 'store-writes: PostgreSQL group commit vs plain pooled writes, named and unnamed',
      context: [
        machineLine(),
        `revision ${revision()}; PostgreSQL 15, fsync on, on the same machine; pool of ${POOL_SIZE} connections; ${ROUNDS} rounds of ${ROUND_MS / 1000} s per mode, the modes' order rotating, medians`,
        "modes: 'group commit' and 'plain' send named prepared statements as nodes do; 'plain, unnamed' as with databasePreparedStatements: false",
        `other processes used ${idle.toFixed(0)}% of a core before the run`,
        'login: one browser-mode login\'s statements (insert at the first fetch, code and identity read at once, settlement, the mark written with others within 500 ms); writes/s and µs are per login; \'marks at once\': each mark written as soon as the loop is free (as before marks were collected)',
        'qr request: a tab\'s first QR request stored (one INSERT qr_requests; its refreshes write nothing); register: a new tab\'s binding and replay read',
        'arrivals + logins: one login and two new tabs (each a Register and a first QR request), the capacity estimate\'s mix; writes/s and µs are per login with its two arrivals',
      ],
      sections: [{ heading: 'Writes per second and latency (ms)', lines: table(['write', 'callers', 'mode', 'writes/s', 'p50', 'p99', 'PostgreSQL µs/write'], rows) }],
      measurements,
      budgets: [],
    };
  },
};
