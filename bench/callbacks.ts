/**
 * Callback delivery benchmark: how many backend callbacks per second tabwire's durable outbox gets to a
 * local HTTPS receiver, next to plain undici POSTs of the same body from the same process to the same
 * receiver, in the same run. An outbox callback takes the path of a real signature in backend mode:
 * the code is settled and its callback stored in one transaction (code store `settle`), then the
 * CallbackDeliverer signs it (Standard Webhooks v1a + v1), POSTs it over HTTPS and marks it delivered.
 * Then the signature -> callback latency at a steady login rate (bench/callback-latency.ts).
 * See docs/benchmarks.md.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Agent, request } from 'undici';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config/load.js';
import { openSqliteStore } from '../src/store/sqlite/open.js';
import type { Store } from '../src/store/stores.js';
import { signatureToCallbackLatency, type LatencyReport } from './callback-latency.js';
import { freePort, startChild, type ChildServer } from './lib/processes/child.js';
import { selfSignedLoopbackCertificate } from './lib/callbacks/tls.js';
import { callbacksReport } from './lib/callbacks/report.js';
import { observed, outboxRound, plainRound, type OutboxRig, type PlainRig } from './lib/callbacks/rounds.js';
import { KINDS, N, ROUNDS, WARMUP_PASSES, type Round } from './lib/callbacks/settings.js';
import { expect, waitForQuiet, waitUntil } from './lib/common.js';
import { inScratchDir } from './lib/measure/scratch-dir.js';
import type { BenchReport, Benchmark } from './lib/measure/types.js';

/** The callbacks benchmark: outbox and plain rounds in turn, then the signature -> callback latency run. */
export const callbacks: Benchmark = {
  name: 'callbacks',
  description: 'backend callbacks/s through the durable outbox vs plain undici POSTs to the same HTTPS receiver',
  async run(): Promise<BenchReport> {
    return inScratchDir(async (dir) => {
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

        const outbox: OutboxRig = { store, hooks, deliverer, template, flowCode, receiverCpu: () => rx.cpuMicros() };

        const agent = new Agent({ connect: { ca: readFileSync(tls.certFile, 'utf8') } });
        plainAgent.agent = agent;
        const plain: PlainRig = { url, agent, body, receiverCpu: () => rx.cpuMicros() };

        // Warm-up, uncounted, in turn like the counted rounds: both paths share undici's code.
        const roundOf = (kind: Round['kind'], n: number, tag: string): Promise<Round> => (kind === 'plain' ? plainRound(plain, n) : outboxRound(outbox, kind, n, tag));
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
        const expected = 1 + KINDS.length * (WARMUP_PASSES + ROUNDS) * N;

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

        return callbacksReport({ title: callbacks.description, rounds, latency, latencyError, body, signPath, received: received.received, expected, idle });
      } finally {
        await plainAgent.agent?.close();
        await app?.close();
        await store?.close();
        await receiver?.stop();
      }
    });
  },
};
