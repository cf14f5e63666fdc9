/**
 * Callback delivery benchmark: how many backend callbacks per second tabwire's durable outbox gets to a
 * local HTTPS receiver, next to plain undici POSTs of the same body from the same process to the same
 * receiver, in the same run. An outbox callback takes the path of a real signature in backend mode:
 * the code is settled and its callback stored in one transaction (code store `settle`), then the
 * CallbackDeliverer signs it (Standard Webhooks v1a + v1), POSTs it over HTTPS and marks it delivered.
 * Then the signature -> callback latency at a steady login rate (bench/callback-latency.ts).
 * See docs/benchmarks.md.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Agent, request } from 'undici';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config/load.js';
import { openSqliteStore } from '../src/store/sqlite/open.js';
import type { Callback, CallbackStore, LoginCode, Store } from '../src/store/stores.js';
import { BUDGET_P99_MS, LOGIN_RATE, signatureToCallbackLatency, type LatencyReport } from './callback-latency.js';
import { freePort, startChild, type ChildServer } from './lib/child.js';
import { selfSignedLoopbackCertificate } from './lib/callbacks-tls.js';
import { CpuWindow, OTHER_CPU_LIMIT, expect, machineLine, ownCpu, revision, versionOf, waitForQuiet, waitUntil } from './lib/channel-common.js';
import { formatRate, formatRatio, percentile, table } from './lib/stats.js';
import type { BenchReport, Benchmark, BudgetCheck, Measurement } from './lib/types.js';

/** Callbacks per measured round. */
const N = 2_000;
/**
 * Uncounted passes (every kind in turn, N each) before the counted rounds. Both paths kept getting
 * faster for ~6 rounds of 2,000 (JIT, TLS sessions, pooled connections, the SQLite log growing to its
 * working size): with the two short passes used before, the first counted outbox round ran at 2/3 of
 * the later ones. A few seconds in all; the budget is about a node that has been delivering a while.
 */
const WARMUP_PASSES = 6;
/** Rounds of each kind, taken in turn (plain, outbox, enqueue, plain ...); the rate is the median. */
const ROUNDS = 5;
/**
 * Requests in flight for the plain POSTs, and signatures in flight (producers) for the outbox: as many
 * signing requests at once as plain requests.
 */
const PLAIN_CONCURRENCY = 16;
/** The budget: outbox callbacks/s at least this share of the plain POST rate. */
const BUDGET_SHARE = 0.5;
const ROUND_TIMEOUT_MS = 60_000;

interface Round {
  /** outbox: settle + callback, 16 producers; enqueue: deliverer.enqueue awaited one by one (the earlier benchmark); plain: undici POSTs. */
  kind: 'outbox' | 'enqueue' | 'plain';
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
      const flowCode = (await store.codes.get(signPath.split('/').pop()!))!;

      /**
       * One outbox round. `outbox`: n codes are issued first (uncounted), then PLAIN_CONCURRENCY producers
       * settle them as a signature does in backend mode (QuickLogin.sign -> backendMode.settleWith ->
       * deliverer.storeAndAttempt with the code store's settle). `enqueue`: deliverer.enqueue awaited one by
       * one, as the benchmark measured before (a path production does not take since callbacks are stored
       * with their code's settlement).
       */
      const outboxRound = async (kind: 'outbox' | 'enqueue', n: number, tag: string): Promise<Round> => {
        const created = Date.now();
        const codes = Array.from({ length: n }, (_, i): LoginCode => ({ ...flowCode, code: `b${tag}x${i}`, state: 'pending', legalId: null, signedAt: null, createdAt: created, expiresAt: created + 300_000 }));
        if (kind === 'outbox') await Promise.all(codes.map((c) => store!.codes.insert(c)));
        const callbackFor = (code: string): Callback => {
          const now = Date.now();
          return { ...template, id: `msg_${code}`, state: 'pending', attempts: 0, nextAttemptAt: now, deadline: now + 300_000, lastError: null, createdAt: now, deliveredAt: null };
        };
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
        if (kind === 'enqueue') {
          for (const { code } of codes) {
            const callback = callbackFor(code);
            enqueuedAt.set(callback.id, performance.now());
            expect(await deliverer.enqueue(callback), `callback ${callback.id} was not inserted`);
          }
        } else {
          let next = 0;
          const producer = async (): Promise<void> => {
            while (next < n) {
              const { code } = codes[next++]!;
              const callback = callbackFor(code);
              enqueuedAt.set(callback.id, performance.now());
              const settled = await deliverer.storeAndAttempt(callback, (toStore) =>
                store!.codes.settle(code, { state: 'approved', legalId: flowCode.legalId!, now: Date.now(), callback: toStore }),
              );
              expect(settled, `code ${code} was not settled`);
            }
          };
          await Promise.all(Array.from({ length: PLAIN_CONCURRENCY }, producer));
        }
        const timeout = new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), ROUND_TIMEOUT_MS).unref());
        const outcome = await Promise.race([done, timeout]);
        const cpu = await window.close();
        expect(outcome !== 'timeout', `${kind} round ${tag}: ${latencies.length} of ${n} callbacks delivered in ${ROUND_TIMEOUT_MS} ms`);
        const ms = last - t0;
        return {
          kind,
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

      // Warm-up, uncounted, in turn like the counted rounds: both paths share undici's code.
      const KINDS = ['plain', 'outbox', 'enqueue'] as const;
      const roundOf = (kind: Round['kind'], n: number, tag: string): Promise<Round> => (kind === 'plain' ? plainRound(n) : outboxRound(kind, n, tag));
      for (let pass = 0; pass < WARMUP_PASSES; pass++) {
        for (const kind of KINDS) await roundOf(kind, N, `w${pass}${kind[0]}`);
      }
      const rounds: Round[] = [];
      for (let r = 0; r < ROUNDS; r++) {
        for (const kind of KINDS) rounds.push(await roundOf(kind, N, `r${r}${kind[0]}`));
      }
      const received = JSON.parse(
        (await request(`https://127.0.0.1:${rx.port}/count`, { dispatcher: agent }).then((res) => res.body.text())) as string,
      ) as { received: number };
      const expected = 1 + 3 * (WARMUP_PASSES + ROUNDS) * N;

      const of = (kind: Round['kind']): Round[] => {
        const all = rounds.filter((r) => r.kind === kind);
        const quiet = all.filter((r) => r.otherPercent <= OTHER_CPU_LIMIT);
        return quiet.length >= Math.ceil(ROUNDS / 2) ? quiet : all;
      };
      const plainRate = median(of('plain').map((r) => r.rate));
      const outboxRate = median(of('outbox').map((r) => r.rate));
      const enqueueRate = median(of('enqueue').map((r) => r.rate));
      const share = outboxRate / plainRate;
      const errors = rounds.reduce((n, r) => n + r.errors, 0);
      const disturbed = rounds.filter((r) => r.otherPercent > OTHER_CPU_LIMIT);

      // The throughput rounds are done: the in-process app goes before the latency run starts its server.
      await app.close();
      app = undefined;
      let latency: LatencyReport | undefined;
      let latencyError: string | undefined;
      try {
        latency = await signatureToCallbackLatency(dir, tls);
      } catch (err) {
        latencyError = (err as Error).message;
      }

      const fmt = (v: number): string => (v >= 10 ? v.toFixed(1) : v.toFixed(2));
      const label: Record<Round['kind'], string> = {
        plain: `plain undici POST, ${PLAIN_CONCURRENCY} in flight`,
        outbox: `outbox: settle + callback, ${PLAIN_CONCURRENCY} signatures in flight -> 2xx -> delivered`,
        enqueue: 'outbox: deliverer.enqueue awaited one by one (earlier benchmark)',
      };
      const rows = rounds.map((r, i) => [
        `${label[r.kind]} (round ${Math.floor(i / KINDS.length) + 1})`,
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
        latency?.budget ?? {
          name: `p99 signature -> callback received <= ${BUDGET_P99_MS} ms at ${LOGIN_RATE} logins/s`,
          met: false,
          unreliable: 'the latency run failed',
          detail: latencyError ?? 'not run',
        },
      ];
      const measurements: Measurement[] = [
        ...rounds.map((r, i) => ({
          key: `callbacks.${r.kind}.${Math.floor(i / KINDS.length)}`,
          label: r.kind === 'plain' ? 'plain POSTs' : `${r.kind} callbacks`,
          rate: r.rate,
          unit: r.kind === 'plain' ? 'req' : 'callback',
          count: r.count,
          windowMs: r.ms,
          cpuPercent: r.cpuPercent,
          otherCpuPercent: r.otherPercent,
          latencyMs: { p50: r.p50, p99: r.p99, max: r.max },
          errors: r.errors,
        })),
        ...(latency ? [latency.measurement] : []),
      ];
      return {
        title: callbacks.description,
        context: [
          machineLine(),
          `tabwire: ${revision()}`,
          `libraries: undici ${versionOf('undici')}, better-sqlite3 ${versionOf('better-sqlite3')}, kysely ${versionOf('kysely')}`,
          `receiver: node:https in a child process, self-signed P-256 certificate for 127.0.0.1, trusted via callbackCaFile; callbackAllowedHosts ['127.0.0.1']`,
          `tabwire (buildApp, SQLite in a temp dir) and the plain client run in this process; body = the real callback of a signing flow (${Buffer.byteLength(body)} bytes, Standard Webhooks v1a + v1 signatures per outbox callback)`,
          `sanity: backend registered, QR issued for it, approved via POST ${signPath.replace(/[^/]+$/, '{code}')}/Dev; its callback was delivered before anything was timed`,
          `each round: ${N.toLocaleString('en-US')} POSTs / callbacks; an outbox round's codes are issued before it (uncounted); rate = count / (last delivered - first started)`,
          `receiver counted ${received.received.toLocaleString('en-US')} POSTs (expected ${expected.toLocaleString('en-US')}); retries or failures in the outbox: ${errors}`,
          `idle check before the run: other processes used ${idle.toFixed(0)}% of a core`,
          ...(disturbed.length > 0 ? [`WARNING: other processes used > ${OTHER_CPU_LIMIT}% of a core in ${disturbed.length} round(s) (marked !)`] : []),
          ...(latency?.context ?? []),
        ],
        sections: [
          {
            heading: `Rounds in turn (after ${WARMUP_PASSES} uncounted passes of ${N.toLocaleString('en-US')} of each kind); latency ms per callback from its start`,
            lines: [
              ...table(['path', 'per s', 'p50', 'p99', 'max', 'CPU here', 'receiver CPU', 'other', 'retries/errors'], rows),
              `medians: outbox ${formatRate(outboxRate)} callbacks/s, plain ${formatRate(plainRate)} POSTs/s -> ${formatRatio(share)}; enqueue one by one ${formatRate(enqueueRate)}/s -> ${formatRatio(enqueueRate / plainRate)}`,
              'outbox latency is mostly queueing: a whole round is started at once and the deliverer sends 64 at a time.',
            ],
          },
          {
            heading: `Signature -> callback received at ${LOGIN_RATE} logins/s (real server, load and receiver in this process)`,
            lines: latency?.lines ?? [`failed: ${latencyError}`],
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
