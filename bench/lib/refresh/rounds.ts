/**
 * The measured windows of the QR refresh benchmark (bench/qr-refresh.ts): a closed-loop round of refreshes
 * (each request a waiting tab asking again for a code with its own cookie and the same parameters as
 * every time before) against one server, and an idle window of the same length beside it (the tabs
 * connected, no refreshes), both read by the cluster benchmark's Meter (CPU from /proc for every thread,
 * INFO commandstats, pg_stat_statements).
 */
import { expect } from '../common.js';
import type { Meter, Window } from '../cluster/meter.js';
import { runMultiLoad } from '../load/multi-load.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { LOAD, type RefreshRound } from './settings.js';

/** A waiting tab: its id and its session cookie (from the 101 of its WebSocket). */
export interface TabCookie {
  tab: string;
  cookie: string;
}

/**
 * The requests a waiting page sends, one per tab, whole: `POST <path>` with the reference page's body
 * `{serviceId:'', tab, mode:'text', purpose}`, the tab's cookie, Origin and Referer. The bare route gets
 * the same bytes on its own path, so both servers parse the same request.
 */
export function refreshRequests(tabs: readonly TabCookie[], port: number, origin: string, purpose: string, path = '/QuickLogin'): Buffer[] {
  return tabs.map(({ tab, cookie }) => {
    const body = JSON.stringify({ serviceId: '', tab, mode: 'text', purpose });
    const head = [
      `POST ${path} HTTP/1.1`,
      `Host: 127.0.0.1:${port}`,
      'Accept: */*',
      'Content-Type: application/json',
      `Origin: ${origin}`,
      `Referer: ${origin}/`,
      `Cookie: ${cookie}`,
      `Content-Length: ${Buffer.byteLength(body)}`,
    ].join('\r\n');
    return Buffer.from(`${head}\r\n\r\n${body}`, 'latin1');
  });
}

/** A tabwire answer must carry the code's text and signUrl; the bare route's its constant. */
export const checkQrAnswer = (body: Buffer): string | undefined => {
  const a = JSON.parse(body.toString()) as { text?: unknown; signUrl?: unknown };
  return typeof a.text === 'string' && typeof a.signUrl === 'string' ? undefined : 'answer without text/signUrl';
};
export const checkBareAnswer = (body: Buffer): string | undefined => ((JSON.parse(body.toString()) as { ok?: unknown }).ok === true ? undefined : 'bare answer without ok');

/** One closed-loop round of `requests` (in turn) against `port`, measured by `meter` over its window. */
export async function loadRound(side: RefreshRound['side'], meter: Meter, port: number, requests: readonly Buffer[], check: (body: Buffer) => string | undefined, durationMs = LOAD.durationMs, warmupMs = LOAD.warmupMs): Promise<RefreshRound> {
  let close: (() => Promise<Window>) | undefined;
  let window: Window | undefined;
  const load = await runMultiLoad({
    targets: [{ port, connections: LOAD.connections }],
    request: (i) => requests[i % requests.length]!,
    expectStatus: 200,
    check,
    warmupMs,
    durationMs,
    onWindow: {
      open: async () => {
        close = await meter.open();
      },
      close: async () => {
        window = await close!();
      },
    },
  });
  expect(load.errors === 0, `${side}: ${load.errors} failed refreshes, first: ${load.firstError}`);
  return { side, load, window: window! };
}

/** The same length of time with the tabs connected and no refreshes: pings, heartbeats, background work. */
export async function idleRound(side: RefreshRound['side'], meter: Meter, durationMs = LOAD.durationMs): Promise<RefreshRound> {
  const close = await meter.open();
  await sleep(durationMs);
  return { side, window: await close() };
}
