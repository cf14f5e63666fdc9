/**
 * Callback delivery benchmark: how many backend callbacks per second tabwire's durable outbox
 * (CallbackDeliverer: SQLite insert, claim, signed POST over HTTPS, mark delivered) gets to a
 * local HTTPS receiver, next to plain undici POSTs of the same body from the same process to the
 * same receiver, in the same run. See docs/benchmarks.md.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Agent, request } from 'undici';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config/load.js';
import { openSqliteStore } from '../src/store/sqlite.js';
import type { Callback, CallbackStore, Store } from '../src/store/stores.js';
import { freePort, startChild, type ChildServer } from './lib/child.js';
import { selfSignedLoopbackCertificate } from './lib/callbacks-tls.js';
import { CpuWindow, OTHER_CPU_LIMIT, expect, machineLine, ownCpu, revision, versionOf, waitForQuiet, waitUntil } from './lib/channel-common.js';
import { formatRate, formatRatio, percentile, table } from './lib/stats.js';
import type { BenchReport, Benchmark, BudgetCheck, Measurement } from './lib/types.js';

/** Callbacks per measured round. */
const N = 2_000;
const WARMUP = 300;
/** Plain POSTs before the first counted round: the plain path needs more calls than the outbox to be warm. */
const PLAIN_WARMUP = 1_000;
/** Rounds of each kind, taken in turn (plain, outbox, plain, outbox ...); the rate is the median. */
const ROUNDS = 3;
/** Requests in flight for the plain POSTs: the deliverer's batch size (src/callbacks/deliverer.ts BATCH). */
const PLAIN_CONCURRENCY = 16;
/** The issue's budget: outbox callbacks/s at least this share of the plain POST rate. */
const BUDGET_SHARE = 0.5;
const ROUND_TIMEOUT_MS = 60_000;

interface Round {
  kind: 'outbox' | 'plain';
  count: number;
  ms: number;
  rate: number;
  /** Per-callback time from enqueue (or request start) to delivered, ms. */
  p50: number;
  p99: number;
  max: number;
  cpuPercent: number;
  receiverCpuPercent: number;
  otherPercent: number;
  errors: number;
}

/** The callback store with a hook on markDelivered: the moment a 2xx has been recorded. */
function observed(store: Store): { store: Store; hooks: { delivered: (id: string) => void; retried: number } } {
  const hooks = { delivered: (_id: string): void => undefined, retried: 0 };
  const inner = store.callbacks;
  const callbacks: CallbackStore = {
    insert: (c, leaseUntil) => inner.insert(c, leaseUntil),
    get: (id) => inner.get(id),
    remove: (id) => inner.remove(id),
    claimDue: (now, leaseMs, limit) => inner.claimDue(now, leaseMs, limit),
    deleteEnded: (before) => inner.deleteEnded(before),
    renewLease: (id, heldUntil, until) => inner.renewLease(id, heldUntil, until),
    async markDelivered(id, now) {
      const moved = await inner.markDelivered(id, now);
      if (moved) hooks.delivered(id);
      return moved;
    },
    async reschedule(id, attempts, nextAttemptAt, error) {
      hooks.retried++;
      return inner.reschedule(id, attempts, nextAttemptAt, error);
    },
    async finish(id, state, attempts, error) {
      hooks.retried++;
      return inner.finish(id, state, attempts, error);
    },
  };
  return { store: { ...store, callbacks }, hooks };
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

export const callbacks: Benchmark = {
  name: 'callbacks',
  description: 'backend callbacks/s through the durable outbox vs plain undici POSTs to the same HTTPS receiver',
  async run(): Promise<BenchReport> {
    const dir = mkdtempSync(join(tmpdir(), 'tabwire-bench-'));
    const removeDir = (): void => rmSync(dir, { recursive: true, force: true });
    process.once('exit', removeDir);
    let receiver: ChildServer | undefined;
    let app: Awaited<ReturnType<typeof buildApp>> | undefined;
    let store: Store | undefined;
    const plainAgent = { agent: undefined as Agent | undefined };
    try {
      const idle = await waitForQuiet();
      const tls = selfSignedLoopbackCertificate(dir);
      receiver = await startChild('callback receiver', new URL('./servers/callbacks-receiver.ts', import.meta.url), [
        JSON.stringify({ port: await freePort(), ...tls }),
      ]);
      const rx = receiver;
      const url = `https://127.0.0.1:${rx.port}/tabwire-callback`;

      // tabwire in this process, not listening: the deliverer is driven directly, the signing flow through inject.
      store = await openSqliteStore(join(dir, 'callbacks.sqlite'));
      const { store: watched, hooks } = observed(store);
      const config = loadConfig(
        {},
        { port: await freePort(), sqliteFile: join(dir, 'unused.sqlite'), logLevel: 'silent', callbackCaFile: tls.certFile, callbackAllowedHosts: ['127.0.0.1'] },
      );
      app = await buildApp(config, { store: watched });
      await app.ready();
      const { deliverer } = app.tabwire;

      // Sanity, and a real callback body: register a backend, issue a QR for it, approve with the dev identity.
      const secret = `whsec_${randomBytes(32).toString('base64')}`;
      const inject = async (path: string, payload: unknown): Promise<Record<string, unknown>> => {
        const r = await app!.inject({ method: 'POST', url: path, payload: payload as Record<string, unknown> });
        expect(r.statusCode === 200, `POST ${path} answered ${r.statusCode}: ${r.body.slice(0, 300)}`);
        return r.json<Record<string, unknown>>();
      };
      const { serviceId } = (await inject('/QuickLogin', { service: url, sessionId: 'bench-session', webhookSecret: secret })) as { serviceId: string };
      const qr = await inject('/QuickLogin', { mode: 'text', purpose: 'Benchmark login', serviceId, tab: '', propertyFilter: 'FIRST' });
      const signPath = new URL(qr.signUrl as string).pathname;
      const approved = await inject(`${signPath}/Dev`, { decision: 'approve' });
      expect(approved.state === 'approved', `dev approval answered ${JSON.stringify(approved)}`);
      const flowId = `msg_${signPath.split('/').pop()}`;
      expect(
        await waitUntil(async () => (await store!.callbacks.get(flowId))?.state === 'delivered', 10_000),
        `the signing flow's callback ${flowId} was not delivered: ${JSON.stringify(await store.callbacks.get(flowId))}`,
      );
      const template = (await store.callbacks.get(flowId))!;
      const body = template.body;

      const outboxRound = async (n: number, tag: string): Promise<Round> => {
        const enqueuedAt = new Map<string, number>();
        const latencies: number[] = [];
        let last = 0;
        const retriedBefore = hooks.retried;
        const done = new Promise<void>((resolve) => {
          hooks.delivered = (id) => {
            const at = enqueuedAt.get(id);
            if (at === undefined) return;
            last = performance.now();
            latencies.push(last - at);
            if (latencies.length === n) resolve();
          };
        });
        const window = await CpuWindow.open([ownCpu, () => rx.cpuMicros()]);
        const t0 = performance.now();
        for (let i = 0; i < n; i++) {
          const id = `bench_${tag}_${i}`;
          const now = Date.now();
          const callback: Callback = {
            ...template,
            id,
            state: 'pending',
            attempts: 0,
            nextAttemptAt: now,
            deadline: now + 300_000,
            lastError: null,
            createdAt: now,
            deliveredAt: null,
          };
          enqueuedAt.set(id, performance.now());
          expect(await deliverer.enqueue(callback), `callback ${id} was not inserted`);
        }
        const timeout = new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), ROUND_TIMEOUT_MS).unref());
        const outcome = await Promise.race([done, timeout]);
        const cpu = await window.close();
        expect(outcome !== 'timeout', `outbox round ${tag}: ${latencies.length} of ${n} callbacks delivered in ${ROUND_TIMEOUT_MS} ms`);
        const ms = last - t0;
        return {
          kind: 'outbox',
          count: n,
          ms,
          rate: (n * 1000) / ms,
          p50: percentile(latencies, 50),
          p99: percentile(latencies, 99),
          max: percentile(latencies, 100),
          cpuPercent: cpu.cpuPercent[0]!,
          receiverCpuPercent: cpu.cpuPercent[1]!,
          otherPercent: cpu.otherPercent,
          errors: hooks.retried - retriedBefore,
        };
      };

      const agent = new Agent({ connect: { ca: readFileSync(tls.certFile, 'utf8') } });
      plainAgent.agent = agent;
      const plainRound = async (n: number): Promise<Round> => {
        const latencies: number[] = [];
        let errors = 0;
        let next = 0;
        const window = await CpuWindow.open([ownCpu, () => rx.cpuMicros()]);
        const t0 = performance.now();
        const lane = async (): Promise<void> => {
          while (next < n) {
            next++;
            const started = performance.now();
            const response = await request(url, { method: 'POST', dispatcher: agent, headers: { 'content-type': 'application/json' }, body });
            await response.body.dump();
            if (response.statusCode !== 200) errors++;
            latencies.push(performance.now() - started);
          }
        };
        await Promise.all(Array.from({ length: PLAIN_CONCURRENCY }, lane));
        const ms = performance.now() - t0;
        const cpu = await window.close();
        return {
          kind: 'plain',
          count: n,
          ms,
          rate: (n * 1000) / ms,
          p50: percentile(latencies, 50),
          p99: percentile(latencies, 99),
          max: percentile(latencies, 100),
          cpuPercent: cpu.cpuPercent[0]!,
          receiverCpuPercent: cpu.cpuPercent[1]!,
          otherPercent: cpu.otherPercent,
          errors,
        };
      };

      // Warm-up (JIT, TLS sessions, pooled connections), uncounted. Twice in turn: both paths share
      // undici's code, and the first plain round after the first outbox round came out slow.
      for (const pass of [1, 2]) {
        await plainRound(PLAIN_WARMUP);
        await outboxRound(WARMUP, `warm${pass}`);
      }
      const rounds: Round[] = [];
      for (let r = 0; r < ROUNDS; r++) {
        rounds.push(await plainRound(N));
        rounds.push(await outboxRound(N, `r${r}`));
      }
      const received = JSON.parse(
        (await request(`https://127.0.0.1:${rx.port}/count`, { dispatcher: agent }).then((res) => res.body.text())) as string,
      ) as { received: number };
      const expected = 1 + 2 * (PLAIN_WARMUP + WARMUP) + 2 * ROUNDS * N;

      const of = (kind: Round['kind']): Round[] => {
        const all = rounds.filter((r) => r.kind === kind);
        const quiet = all.filter((r) => r.otherPercent <= OTHER_CPU_LIMIT);
        return quiet.length >= Math.ceil(ROUNDS / 2) ? quiet : all;
      };
      const plainRate = median(of('plain').map((r) => r.rate));
      const outboxRate = median(of('outbox').map((r) => r.rate));
      const share = outboxRate / plainRate;
      const errors = rounds.reduce((n, r) => n + r.errors, 0);
      const disturbed = rounds.filter((r) => r.otherPercent > OTHER_CPU_LIMIT);

      const fmt = (v: number): string => (v >= 10 ? v.toFixed(1) : v.toFixed(2));
      const rows = rounds.map((r, i) => [
        `${r.kind === 'outbox' ? 'outbox: deliverer.enqueue -> 2xx -> markDelivered' : `plain undici POST, ${PLAIN_CONCURRENCY} in flight`} (round ${Math.floor(i / 2) + 1})`,
        formatRate(r.rate),
        fmt(r.p50),
        fmt(r.p99),
        fmt(r.max),
        `${r.cpuPercent.toFixed(0)}%`,
        `${r.receiverCpuPercent.toFixed(0)}%`,
        `${r.otherPercent.toFixed(0)}%${r.otherPercent > OTHER_CPU_LIMIT ? ' !' : ''}`,
        String(r.errors),
      ]);
      const budgets: BudgetCheck[] = [
        {
          name: `outbox callbacks/s >= ${BUDGET_SHARE * 100}% of plain POSTs/s`,
          met: share >= BUDGET_SHARE,
          unreliable: disturbed.length > 0 ? `other processes used > ${OTHER_CPU_LIMIT}% of a core in ${disturbed.length} round(s)` : undefined,
          detail: `${formatRate(outboxRate)} callbacks/s = ${formatRatio(share)} of ${formatRate(plainRate)} POSTs/s (medians of ${ROUNDS} rounds of ${N.toLocaleString('en-US')})`,
        },
      ];
      const measurements: Measurement[] = rounds.map((r, i) => ({
        key: `callbacks.${r.kind}.${Math.floor(i / 2)}`,
        label: r.kind === 'outbox' ? 'outbox callbacks' : 'plain POSTs',
        rate: r.rate,
        unit: r.kind === 'outbox' ? 'callback' : 'req',
        count: r.count,
        windowMs: r.ms,
        cpuPercent: r.cpuPercent,
        otherCpuPercent: r.otherPercent,
        latencyMs: { p50: r.p50, p99: r.p99, max: r.max },
        errors: r.errors,
      }));
      return {
        title: callbacks.description,
        context: [
          machineLine(),
          `tabwire: ${revision()}`,
          `libraries: undici ${versionOf('undici')}, better-sqlite3 ${versionOf('better-sqlite3')}, kysely ${versionOf('kysely')}`,
          `receiver: node:https in a child process, self-signed P-256 certificate for 127.0.0.1, trusted via callbackCaFile; callbackAllowedHosts ['127.0.0.1']`,
          `tabwire (buildApp, SQLite in a temp dir) and the plain client run in this process; body = the real callback of a signing flow (${Buffer.byteLength(body)} bytes, Standard Webhooks v1a + v1 signatures per outbox callback)`,
          `sanity: backend registered, QR issued for it, approved via POST ${signPath.replace(/[^/]+$/, '{code}')}/Dev; its callback was delivered before anything was timed`,
          `each round: ${N.toLocaleString('en-US')} callbacks enqueued back to back (awaiting each insert) / ${N.toLocaleString('en-US')} POSTs; rate = count / (last delivered - first enqueued)`,
          `receiver counted ${received.received.toLocaleString('en-US')} POSTs (expected ${expected.toLocaleString('en-US')}); retries or failures in the outbox: ${errors}`,
          `idle check before the run: other processes used ${idle.toFixed(0)}% of a core`,
          ...(disturbed.length > 0 ? [`WARNING: other processes used > ${OTHER_CPU_LIMIT}% of a core in ${disturbed.length} round(s) (marked !)`] : []),
        ],
        sections: [
          {
            heading: `Rounds in turn (after ${PLAIN_WARMUP} plain, ${WARMUP} outbox, twice, uncounted); latency ms per callback from enqueue / request start`,
            lines: [
              ...table(['path', 'per s', 'p50', 'p99', 'max', 'CPU here', 'receiver CPU', 'other', 'retries/errors'], rows),
              `medians: outbox ${formatRate(outboxRate)} callbacks/s, plain ${formatRate(plainRate)} POSTs/s -> ${formatRatio(share)}`,
              'outbox latency is mostly queueing: the whole round is enqueued at once and the deliverer sends 16 at a time.',
            ],
          },
        ],
        measurements,
        budgets,
      };
    } finally {
      await plainAgent.agent?.close();
      await app?.close();
      await store?.close();
      await receiver?.stop();
      process.off('exit', removeDir);
      removeDir();
    }
  },
};
