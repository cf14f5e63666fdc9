/**
 * The login phase of the cluster benchmark (bench/cluster.ts): codes issued and signed on one node for tabs
 * on another (or the same), timed from the signed POST to SignatureReceived at the tab.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';
import type { DevIdentity } from '../../../src/identity/dev-identity.js';
import { signEd25519 } from '../../../src/identity/keys.js';
import { signedMessage } from '../../../src/quicklogin/challenge.js';
import { waitUntil } from '../common.js';
import { tabIdOf } from '../load/channel-ids.js';
import type { Meter, Window } from './meter.js';
import { watchLoops, type NodeRig } from './nodes.js';
import { LOGIN_RATE, LOGIN_WARMUP, LOGINS, PURPOSE, type LoginRun, type LoopReading } from './settings.js';
import { fetchOnce } from '../load/load.js';
import { percentile } from '../measure/stats.js';

const jsonHeaders = (cookie: string, origin: string) => ({ accept: 'application/json', 'content-type': 'application/json', cookie, origin });

/**
 * Logins on tabs of `holder`, each code asked for and signed on `via`: first the codes (POST /QuickLogin,
 * the reference page's body, with the tab's cookie; counted as QR requests), then LOGIN_RATE logins a second
 * on a fixed schedule (GET the signUrl, sign its challenge, POST the signature). Latency: from just before the
 * signed POST is sent to SignatureReceived at the tab's WebSocket, both on CLOCK_MONOTONIC.
 */
export async function logins(holder: NodeRig, via: NodeRig, origin: string, signer: DevIdentity, meter: Meter): Promise<LoginRun> {
  const nodes = holder === via ? [holder] : [holder, via];
  let loops: (() => Promise<LoopReading[]>) | undefined;
  const total = LOGIN_WARMUP + LOGINS;
  const cookies = await holder.clients.call<string[]>('cookies', { from: 0, to: total });
  const pool = new Pool(`http://127.0.0.1:${via.server.port}`, { connections: 16, headersTimeout: 10_000, bodyTimeout: 10_000 });
  try {
    const call = async (method: 'GET' | 'POST', path: string, headers: Record<string, string>, body?: unknown): Promise<Record<string, unknown>> => {
      const r = await pool.request({ method, path, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
      const text = await r.body.text();
      if (r.statusCode !== 200) throw new Error(`${method} ${path.replace(/[^/]{20,}$/, '{code}')} answered ${r.statusCode}: ${text.slice(0, 200)}`);
      return JSON.parse(text) as Record<string, unknown>;
    };
    // The codes: the reference page's request for its tab, with its session cookie.
    const paths: string[] = new Array<string>(total);
    let next = 0;
    const closeIssue = await meter.open();
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < total) {
          const k = next++;
          const qr = await call('POST', '/QuickLogin', jsonHeaders(cookies[k]!, origin), { serviceId: '', tab: tabIdOf(holder.prefix, k), mode: 'text', purpose: PURPOSE });
          paths[k] = new URL(qr.signUrl as string).pathname;
        }
      }),
    );
    const issued = { count: total, window: await closeIssue() };

    const signedAt = new Array<bigint>(total);
    const answered: number[] = [];
    let errors = 0;
    let firstError: string | undefined;
    const login = async (k: number): Promise<void> => {
      try {
        const info = await call('GET', paths[k]!, { accept: 'application/json' });
        const signature = signEd25519(signer.key, signedMessage(info.challenge as string, signer.legalId, 'approve'));
        const t = performance.now();
        signedAt[k] = process.hrtime.bigint();
        const answer = await call('POST', paths[k]!, { accept: 'application/json', 'content-type': 'application/json' }, { legalId: signer.legalId, signature, decision: 'approve' });
        if (k >= LOGIN_WARMUP) answered.push(performance.now() - t);
        if (answer.state !== 'approved') throw new Error(`signature answered ${JSON.stringify(answer)}`);
      } catch (err) {
        if (k >= LOGIN_WARMUP) {
          errors++;
          firstError ??= (err as Error).message;
        }
      }
    };
    const running: Promise<void>[] = [];
    let close: (() => Promise<Window>) | undefined;
    let t0 = performance.now();
    let started = 0;
    while (started < total) {
      if (started === LOGIN_WARMUP) {
        // The warm-up logins are answered first, so the measured window starts clean.
        await Promise.all(running);
        await sleep(500);
        await holder.clients.call('arrivals-reset');
        loops = await watchLoops(nodes);
        close = await meter.open();
        t0 = performance.now();
      }
      const base = started < LOGIN_WARMUP ? 0 : LOGIN_WARMUP;
      const due = Math.min(started < LOGIN_WARMUP ? LOGIN_WARMUP : total, base + Math.floor(((performance.now() - t0) * LOGIN_RATE) / 1000) + 1);
      while (started < due) running.push(login(started++));
      await sleep(2);
    }
    await Promise.all(running);
    const expected = LOGINS - errors;
    const arrivalsOf = async () => holder.clients.call<[string, string][]>('arrivals-read');
    await waitUntil(async () => (await arrivalsOf()).length >= expected, 10_000, 100);
    const window = await close!();
    const loopReadings = await loops!();
    // Where the signature path's time went on the node that took the signatures (printed as it is measured).
    const phases = JSON.parse((await fetchOnce(via.server.port, 'GET', '/__bench/phases')).body.toString()) as Record<string, number[]>;
    for (const [name, values] of Object.entries(phases)) {
      const sorted = [...values].sort((x, y) => x - y);
      const at = (q: number) => (sorted[Math.min(sorted.length - 1, Math.floor((q / 100) * sorted.length))] ?? 0).toFixed(2);
      console.log(`  phases on ${via.name}: ${name.padEnd(22)} n=${sorted.length} p50 ${at(50)} p90 ${at(90)} p99 ${at(99)} max ${at(100)} ms; over 20 ms: ${sorted.filter((v) => v > 20).length}`);
    }
    const arrived = new Map((await arrivalsOf()).map(([tab, at]) => [tab, BigInt(at)]));
    const latencies: number[] = [];
    let negative = 0;
    for (let k = LOGIN_WARMUP; k < total; k++) {
      const at = arrived.get(tabIdOf(holder.prefix, k));
      if (at === undefined || signedAt[k] === undefined) continue;
      const v = Number(at - signedAt[k]!) / 1e6;
      if (v < 0) negative++;
      latencies.push(v);
    }
    return {
      latency: { count: latencies.length, p50: percentile(latencies, 50), p90: percentile(latencies, 90), p99: percentile(latencies, 99), max: percentile(latencies, 100), negative },
      answer: { p50: percentile(answered, 50), p99: percentile(answered, 99) },
      logins: LOGINS,
      errors,
      firstError,
      missing: expected - latencies.length,
      issued,
      window,
      loops: loopReadings,
    };
  } finally {
    await pool.close();
  }
}
