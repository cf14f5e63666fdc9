/**
 * The QR-issuance phase of the cluster benchmark (bench/cluster.ts): `POST /QuickLogin` as the reference page
 * sends it, closed-loop over one or more nodes, measured in a window of its own.
 */
import { expect } from '../common.js';
import { tabIdOf } from '../load/channel-ids.js';
import type { Meter, Window } from './meter.js';
import type { NodeRig } from './nodes.js';
import { PURPOSE, QR, QR_FROM, QR_TABS, type QrRound } from './settings.js';
import { runMultiLoad } from '../load/multi-load.js';

/** QR requests as the reference page sends them, for tabs of `owners`, spread over `targets`. */
export async function qrLoad(label: string, owners: NodeRig[], targets: { port: number; connections: number }[], origin: string, meter: Meter): Promise<QrRound> {
  const pairs: { tab: string; cookie: string }[] = [];
  for (const owner of owners) {
    const cookies = await owner.clients.call<string[]>('cookies', { from: QR_FROM, to: QR_FROM + QR_TABS });
    cookies.forEach((cookie, k) => pairs.push({ tab: tabIdOf(owner.prefix, QR_FROM + k), cookie }));
  }
  const built = new Map<number, Buffer[]>();
  const requestsFor = (port: number): Buffer[] => {
    let list = built.get(port);
    if (!list) {
      list = pairs.map(({ tab, cookie }) => {
        const body = JSON.stringify({ serviceId: '', tab, mode: 'text', purpose: PURPOSE });
        const head = [
          'POST /QuickLogin HTTP/1.1',
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
      built.set(port, list);
    }
    return list;
  };
  // Every request a different tab (in turn), so no session comes near its own limit.
  let close: (() => Promise<Window>) | undefined;
  let window: Window | undefined;
  const result = await runMultiLoad({
    targets,
    request: (i, port) => requestsFor(port)[i % pairs.length]!,
    expectStatus: 200,
    check: (body) => {
      const a = JSON.parse(body.toString()) as { text?: unknown; signUrl?: unknown };
      return typeof a.text === 'string' && typeof a.signUrl === 'string' ? undefined : 'answer without text/signUrl';
    },
    warmupMs: QR.warmupMs,
    durationMs: QR.durationMs,
    onWindow: {
      open: async () => {
        close = await meter.open();
      },
      close: async () => {
        window = await close!();
      },
    },
  });
  expect(result.errors === 0, `${label}: ${result.errors} failed QR requests, first: ${result.firstError}`);
  return { label, result, window: window! };
}
