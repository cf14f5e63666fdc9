/**
 * Signature -> callback latency at a steady login rate, what a site in backend mode feels: tabwire runs
 * as a real server in a child process (bench/servers/callbacks-tabwire.ts); this process is the signing
 * apps and the site's backend (an HTTPS receiver). The login codes are issued first (POST /QuickLogin
 * with the serviceId, uncounted): QR issuance has benchmarks of its own, and a waiting page
 * asks for several codes per login. Then, on a fixed schedule of LOGIN_RATE a second, each
 * login is what a signing app does: GET its signUrl, Ed25519-sign the challenge, POST the signature. Both
 * ends of the measured interval are read on this process's clock: from just before the signed POST is
 * sent to when the callback's body has arrived. Part of the `callbacks` benchmark (bench/callbacks.ts);
 * see docs/benchmarks.md.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:https';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';
import { verifyCallback } from '../src/callbacks/verify.js';
import { systemClock } from '../src/clock.js';
import { ensureDevIdentity } from '../src/identity/dev-identity.js';
import { signEd25519 } from '../src/identity/keys.js';
import { signedMessage } from '../src/quicklogin/challenge.js';
import { openSqliteStore } from '../src/store/sqlite/open.js';
import { freePort, startChild, type ChildServer } from './lib/processes/child.js';
import { CpuWindow, OTHER_CPU_LIMIT, expect, ownCpu, waitUntil } from './lib/common.js';
import { percentile } from './lib/measure/stats.js';
import type { BudgetCheck, Measurement } from './lib/measure/types.js';
import { latencyServerConfig } from './servers/callbacks-tabwire.js';

/** Logins per second, started on a fixed schedule (open loop: a slow answer does not slow the arrivals). */
export const LOGIN_RATE = 500;
const WARMUP_SECONDS = 5;
const MEASURED_SECONDS = 20;
/** After the last login, callbacks still missing are waited for this long, then counted as missing. */
const DRAIN_MS = 10_000;
/** Every request of the load gives up after this. */
const REQUEST_TIMEOUT_MS = 10_000;
/** The issue's budget: p99 from signature to callback received. */
export const BUDGET_P99_MS = 50;
/** Code requests in flight while the codes are issued. */
const ISSUERS = 16;
/** The schedule is checked this often; every login due by then is started. */
const TICK_MS = 2;

interface Login {
  measured: boolean;
  /** performance.now() just before the signed POST was sent; NaN until then. */
  signedAt: number;
  /** When the POST's answer arrived. */
  answeredAt: number;
  webhookId: string;
  error?: string;
}

export interface LatencyReport {
  lines: string[];
  context: string[];
  budget: BudgetCheck;
  measurement: Measurement;
}

const fmt = (v: number): string => (v >= 10 ? v.toFixed(1) : v.toFixed(2));

/** `serverNodeArgs`: e.g. ['--cpu-prof'] to profile the server while it is measured. */
export async function signatureToCallbackLatency(dir: string, tls: { certFile: string; keyFile: string }, serverNodeArgs: string[] = []): Promise<LatencyReport> {
  // The backend: HTTPS in this process, so arrival and signature are read on one clock.
  const arrived = new Map<string, number>();
  let duplicates = 0;
  let unverified = 0;
  let verified = 0;
  let webhookKey = '';
  const receiver = createServer({ cert: readFileSync(tls.certFile), key: readFileSync(tls.keyFile) }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const at = performance.now();
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': 2 });
      res.end('ok');
      const id = req.headers['webhook-id'];
      if (typeof id !== 'string') return;
      if (arrived.has(id)) duplicates++;
      else arrived.set(id, at);
      // Every callback must be a real one: verified after answering, so the check adds nothing to the latency.
      setImmediate(() => {
        try {
          verifyCallback(req.headers, Buffer.concat(chunks), webhookKey);
          verified++;
        } catch {
          unverified++;
        }
      });
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const receiverUrl = `https://127.0.0.1:${(receiver.address() as { port: number }).port}/tabwire-callback`;

  let server: ChildServer | undefined;
  let pool: Pool | undefined;
  try {
    // The signing app's identity: the development identity, created in the store before the server starts.
    const port = await freePort();
    const sqliteFile = join(dir, 'latency.sqlite');
    const config = latencyServerConfig(port, sqliteFile, tls.certFile);
    const store = await openSqliteStore(sqliteFile);
    const signer = await ensureDevIdentity(store, systemClock, config.legalDomain);
    await store.close();
    server = await startChild('tabwire (backend mode)', new URL('./servers/callbacks-tabwire.ts', import.meta.url), [
      JSON.stringify({ port, sqliteFile, caFile: tls.certFile }),
    ], { nodeArgs: serverNodeArgs });
    const base = `http://127.0.0.1:${port}`;
    pool = new Pool(base, { connections: 64, headersTimeout: REQUEST_TIMEOUT_MS, bodyTimeout: REQUEST_TIMEOUT_MS });
    const http = pool;
    const call = async (method: 'GET' | 'POST', path: string, body?: unknown): Promise<Record<string, unknown>> => {
      const r = await http.request({
        method,
        path,
        headers: body === undefined ? { accept: 'application/json' } : { accept: 'application/json', 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await r.body.text();
      if (r.statusCode !== 200) throw new Error(`${method} ${path.replace(/[^/]{20,}$/, '{code}')} answered ${r.statusCode}: ${text.slice(0, 200)}`);
      return JSON.parse(text) as Record<string, unknown>;
    };

    webhookKey = (await call('GET', '/.well-known/tabwire/webhook-key')).key as string;
    const secret = `whsec_${randomBytes(32).toString('base64')}`;
    const { serviceId } = (await call('POST', '/QuickLogin', { service: receiverUrl, sessionId: 'bench-latency', webhookSecret: secret })) as { serviceId: string };

    // The codes, issued before anything is timed.
    const warmup = WARMUP_SECONDS * LOGIN_RATE;
    const total = warmup + MEASURED_SECONDS * LOGIN_RATE;
    const paths: string[] = [];
    const issue = async (): Promise<void> => {
      while (paths.length < total) {
        const slot = paths.push('') - 1;
        const qr = await call('POST', '/QuickLogin', { mode: 'text', purpose: 'Latency benchmark', serviceId, tab: '' });
        paths[slot] = new URL(qr.signUrl as string).pathname;
      }
    };
    const issueStarted = performance.now();
    await Promise.all(Array.from({ length: ISSUERS }, issue));
    const issueSeconds = (performance.now() - issueStarted) / 1000;

    const login = async (l: Login, path: string): Promise<void> => {
      try {
        l.webhookId = `msg_${path.split('/').pop()}`;
        const info = await call('GET', path);
        const signature = signEd25519(signer.key, signedMessage(info.challenge as string, signer.legalId, 'approve'));
        l.signedAt = performance.now();
        const answer = await call('POST', path, { legalId: signer.legalId, signature, decision: 'approve' });
        l.answeredAt = performance.now();
        if (answer.state !== 'approved') l.error = `signature answered ${JSON.stringify(answer)}`;
      } catch (err) {
        l.error = (err as Error).message;
      }
    };

    // Open loop: login i starts at t0 + i / rate, whatever the answers do.
    const logins: Login[] = [];
    const running: Promise<void>[] = [];
    let window: CpuWindow | undefined;
    let measuredFrom = 0;
    const t0 = performance.now();
    while (logins.length < total) {
      const due = Math.min(total, Math.floor(((performance.now() - t0) * LOGIN_RATE) / 1000) + 1);
      while (logins.length < due) {
        const l: Login = { measured: logins.length >= warmup, signedAt: Number.NaN, answeredAt: Number.NaN, webhookId: '' };
        if (logins.length === warmup) {
          window = await CpuWindow.open([() => server!.cpuMicros(), ownCpu]);
          measuredFrom = performance.now();
        }
        logins.push(l);
        running.push(login(l, paths[logins.length - 1]!));
      }
      await sleep(TICK_MS);
    }
    const launchedIn = performance.now() - measuredFrom;
    await Promise.all(running);
    const measured = logins.filter((l) => l.measured);
    const wanted = measured.filter((l) => l.error === undefined);
    await waitUntil(() => wanted.every((l) => arrived.has(l.webhookId)), DRAIN_MS, 20);
    const cpu = await window!.close();

    const latencies = wanted.filter((l) => arrived.has(l.webhookId)).map((l) => arrived.get(l.webhookId)! - l.signedAt);
    const answers = wanted.map((l) => l.answeredAt - l.signedAt);
    const errors = measured.filter((l) => l.error !== undefined);
    const missing = wanted.length - latencies.length;
    const rate = (measured.length * 1000) / launchedIn;
    expect(latencies.length > 0, `no callback arrived; first error: ${errors[0]?.error ?? 'none'}`);
    const p = (q: number): number => percentile(latencies, q);
    const serverCpu = cpu.cpuPercent[0]!;
    const benchCpu = cpu.cpuPercent[1]!;
    const disturbed = cpu.otherPercent > OTHER_CPU_LIMIT;
    const slowStart = rate < LOGIN_RATE * 0.95;

    const lines = [
      `${total.toLocaleString('en-US')} codes issued first in ${issueSeconds.toFixed(1)} s (uncounted); ${measured.length.toLocaleString('en-US')} logins (GET signUrl, signed POST) started at ${rate.toFixed(0)}/s over ${(launchedIn / 1000).toFixed(1)} s, after ${warmup.toLocaleString('en-US')} uncounted`,
      `signature -> callback received, ms: p50 ${fmt(p(50))}, p90 ${fmt(p(90))}, p99 ${fmt(p(99))}, max ${fmt(p(100))}`,
      `signature -> its HTTP answer, ms: p50 ${fmt(percentile(answers, 50))}, p99 ${fmt(percentile(answers, 99))}`,
      `callbacks: ${latencies.length.toLocaleString('en-US')} received, ${missing} missing after ${DRAIN_MS / 1000} s, ${duplicates} repeated, ${verified.toLocaleString('en-US')} verified (v1a), ${unverified} failed verification; login errors: ${errors.length}${errors[0] ? ` (first: ${errors[0].error})` : ''}`,
      `CPU over the measured window: tabwire server ${serverCpu.toFixed(0)}%, this process (load + receiver) ${benchCpu.toFixed(0)}%, other processes ${cpu.otherPercent.toFixed(0)}% (% of one core)`,
    ];
    const met = p(99) <= BUDGET_P99_MS && missing === 0 && errors.length === 0 && unverified === 0 && duplicates === 0;
    const unreliable = [
      ...(disturbed ? [`other processes used ${cpu.otherPercent.toFixed(0)}% of a core`] : []),
      ...(slowStart ? [`logins started at ${rate.toFixed(0)}/s, not ${LOGIN_RATE}/s`] : []),
    ];
    return {
      lines,
      context: [
        `latency run: tabwire (buildApp, SQLite, log silent) in a child process listening on loopback; this process issues the codes first (POST /QuickLogin with the serviceId, uncounted), then starts ${LOGIN_RATE} logins/s on a fixed schedule (GET the signUrl, Ed25519-sign its challenge, POST it) and is the HTTPS receiver; processes not pinned to cores`,
      ],
      budget: {
        name: `p99 signature -> callback received <= ${BUDGET_P99_MS} ms at ${LOGIN_RATE} logins/s`,
        met,
        unreliable: unreliable.length > 0 ? unreliable.join('; ') : undefined,
        detail: `p99 ${fmt(p(99))} ms (p50 ${fmt(p(50))}), ${latencies.length.toLocaleString('en-US')} callbacks, ${missing} missing, ${errors.length} login errors, server CPU ${serverCpu.toFixed(0)}%`,
      },
      measurement: {
        key: 'callbacks.latency',
        label: 'signature -> callback received',
        rate,
        unit: 'login',
        count: measured.length,
        windowMs: launchedIn,
        cpuPercent: serverCpu,
        otherCpuPercent: cpu.otherPercent,
        latencyMs: { p50: p(50), p99: p(99), max: p(100) },
        errors: errors.length + missing,
      },
    };
  } finally {
    await pool?.close();
    await server?.stop();
    receiver.closeAllConnections();
    await new Promise<void>((resolve) => receiver.close(() => resolve()));
  }
}
