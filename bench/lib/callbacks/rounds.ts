/**
 * The rounds of the callbacks benchmark (bench/callbacks.ts): callbacks through tabwire's durable outbox
 * (settled with their code, or enqueued one by one) and plain undici POSTs of the same body to the same
 * HTTPS receiver, each timed to its last delivery with the CPU of this process and of the receiver.
 */
import { request, type Agent } from 'undici';
import type { CallbackDeliverer } from '../../../src/callbacks/deliverer.js';
import type { Callback, CallbackStore, CallbackToStore, LoginCode, Store } from '../../../src/store/stores.js';
import { CpuWindow, expect, ownCpu, type CpuProbe } from '../common.js';
import { PLAIN_CONCURRENCY, ROUND_TIMEOUT_MS, type Round } from './settings.js';
import { percentile } from '../measure/stats.js';

/** What the observed store reports: each delivery as it is recorded, and how many retries or failures there were. */
export interface DeliveryHooks {
  delivered: (id: string) => void;
  retried: number;
  /** While set, a delivered mark is answered without the store (the `storeless` rounds). */
  storeless: boolean;
}

/**
 * The callback store with a hook on markDelivered: the moment a 2xx has been recorded. With
 * `hooks.storeless` set, the mark is not written (and counts as moved).
 */
export function observed(store: Store): { store: Store; hooks: DeliveryHooks } {
  const hooks: DeliveryHooks = { delivered: (_id: string): void => undefined, retried: 0, storeless: false };
  const inner = store.callbacks;
  const callbacks: CallbackStore = {
    insert: (c, leaseUntil) => inner.insert(c, leaseUntil),
    get: (id) => inner.get(id),
    remove: (id) => inner.remove(id),
    claimDue: (now, leaseMs, limit) => inner.claimDue(now, leaseMs, limit),
    deleteEnded: (before) => inner.deleteEnded(before),
    renewLease: (id, heldUntil, until) => inner.renewLease(id, heldUntil, until),
    async markDelivered(id, now) {
      const moved = hooks.storeless || (await inner.markDelivered(id, now));
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

/** What an outbox round drives: the store and its delivery hooks, the in-process deliverer, the signing flow's callback and code as templates. */
export interface OutboxRig {
  store: Store;
  hooks: DeliveryHooks;
  deliverer: CallbackDeliverer;
  template: Callback;
  flowCode: LoginCode;
  receiverCpu: CpuProbe;
}

/**
 * One outbox round. `outbox`: n codes are issued first (uncounted), then PLAIN_CONCURRENCY producers
 * settle them as a signature does in backend mode (QuickLogin.sign -> backendMode.settleWith ->
 * deliverer.storeAndAttempt with the code store's settle). `storeless`: the same producers and
 * deliverer, but the settlement and the delivered mark are answered without touching the store, so the
 * round shows what the rest of a callback (signing, the POST, the deliverer's own work) allows on this
 * machine. `enqueue`: deliverer.enqueue awaited one by one, as the benchmark measured before (a path
 * production does not take since callbacks are stored with their code's settlement).
 */
export async function outboxRound(rig: OutboxRig, kind: 'outbox' | 'storeless' | 'enqueue', n: number, tag: string): Promise<Round> {
  const { store, hooks, deliverer, template, flowCode } = rig;
  const created = Date.now();
  const codes = Array.from({ length: n }, (_, i): LoginCode => ({ ...flowCode, code: `b${tag}x${i}`, state: 'pending', legalId: null, signedAt: null, createdAt: created, expiresAt: created + 300_000 }));
  if (kind === 'outbox') await Promise.all(codes.map((c) => store.codes.insert(c)));
  const save =
    kind === 'storeless'
      ? async (): Promise<boolean> => true
      : (code: string, toStore: CallbackToStore): Promise<boolean> => store.codes.settle(code, { state: 'approved', legalId: flowCode.legalId!, now: Date.now(), callback: toStore });
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
  hooks.storeless = kind === 'storeless';
  const window = await CpuWindow.open([ownCpu, rig.receiverCpu]);
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
        const settled = await deliverer.storeAndAttempt(callback, (toStore) => save(code, toStore));
        expect(settled, `code ${code} was not settled`);
      }
    };
    await Promise.all(Array.from({ length: PLAIN_CONCURRENCY }, producer));
  }
  const timeout = new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), ROUND_TIMEOUT_MS).unref());
  const outcome = await Promise.race([done, timeout]);
  hooks.storeless = false;
  const cpu = await window.close();
  expect(outcome !== 'timeout', `${kind} round ${tag}: ${latencies.length} of ${n} callbacks delivered in ${ROUND_TIMEOUT_MS} ms`);
  const ms = last - t0;
  return roundOf(kind, n, ms, latencies, cpu, hooks.retried - retriedBefore);
}

/** What a plain round sends: the same body to the same receiver URL, over its own undici Agent. */
export interface PlainRig {
  url: string;
  agent: Agent;
  body: string;
  receiverCpu: CpuProbe;
}

/** One plain round: n undici POSTs of the callback body, PLAIN_CONCURRENCY in flight. */
export async function plainRound(rig: PlainRig, n: number): Promise<Round> {
  const { url, agent, body } = rig;
  const latencies: number[] = [];
  let errors = 0;
  let next = 0;
  const window = await CpuWindow.open([ownCpu, rig.receiverCpu]);
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
  return roundOf('plain', n, ms, latencies, cpu, errors);
}

/** A round's figures: its rate over `ms`, latency percentiles, and the CPU of this process (0) and the receiver (1). */
function roundOf(kind: Round['kind'], n: number, ms: number, latencies: number[], cpu: { cpuPercent: number[]; otherPercent: number }, errors: number): Round {
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
    errors,
  };
}
