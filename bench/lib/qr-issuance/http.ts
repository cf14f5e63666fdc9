/**
 * The HTTP rows of the QR issuance benchmark (bench/qr-issuance.ts): a bare Fastify route (the budget),
 * tabwire issuing codes in every mode, and `text` on differently configured tabwire servers, each in a
 * child process under a closed-loop load, each bracketed by the encodeQr reference.
 */
import { join } from 'node:path';
import type { QrMode } from '../../../src/quicklogin/quicklogin.js';
import { SERVICE_NODE_FLAGS } from '../../../src/node-flags.js';
import { expect } from '../common.js';
import { startChild, type ChildServer } from '../processes/child.js';
import { fetchOnce, runLoad, type LoadOptions } from '../load/load.js';
import type { Bracketed, Reference } from './reference.js';
import { HTTP, MODES, PNG_CODES, SERVER_WARMUP_MS } from './settings.js';

/** The body of POST /QuickLogin (and of the bare route) for one mode. */
const qrBody = (mode: QrMode): Buffer => Buffer.from(JSON.stringify({ mode, purpose: 'bench', serviceId: '', tab: '' }));
const JSON_HEADERS = { 'content-type': 'application/json' };

/** The parts of a load run every HTTP measurement shares. */
const load = (server: ChildServer, key: string, label: string) =>
  ({
    key,
    label,
    host: '127.0.0.1',
    port: server.port,
    expectStatus: 200,
    serverCpuMicros: () => server.cpuMicros(),
    ...HTTP,
  }) as const;

/** The budget's yardstick: a bare Fastify route that takes the same JSON POST and answers a constant, in its own child. */
export async function bareFastify(port: number, reference: Reference): Promise<Bracketed> {
  let child: ChildServer | undefined;
  try {
    child = await startChild('bare fastify', new URL('../../servers/bare.ts', import.meta.url), [String(port)]);
    const server = child;
    const probe = await fetchOnce(server.port, 'POST', '/bare', { mode: 'text', purpose: 'bench', serviceId: '', tab: '' });
    expect(probe.status === 200, `POST /bare answered ${probe.status}`);
    return await reference.around(server, () =>
      runLoad({
        ...load(server, 'http.bare', 'bare Fastify POST /bare (JSON)'),
        method: 'POST',
        path: () => '/bare',
        headers: JSON_HEADERS,
        body: qrBody('text'),
      }),
    );
  } finally {
    await child?.stop();
  }
}

/**
 * tabwire in a child: checks every mode answers as documented, warms it up uncounted, then measures
 * text, base64, image (context) and GET .png, in this order.
 */
export async function tabwire(port: number, dir: string, reference: Reference, benchUrl: string): Promise<Bracketed[]> {
  let child: ChildServer | undefined;
  try {
    child = await startChild('tabwire', new URL('../../servers/tabwire.ts', import.meta.url), [String(port), join(dir, 'tabwire.sqlite')], { nodeArgs: [...SERVICE_NODE_FLAGS] });
    const server = child;

    // Sanity: every mode answers as docs/signing.md says, before anything is timed.
    const post = async (mode: QrMode): Promise<Record<string, unknown>> => {
      const r = await fetchOnce(server.port, 'POST', '/QuickLogin', { mode, purpose: 'bench', serviceId: '', tab: '' });
      expect(r.status === 200, `POST /QuickLogin (${mode}) answered ${r.status}: ${r.body.toString('utf8').slice(0, 300)}`);
      return JSON.parse(r.body.toString('utf8')) as Record<string, unknown>;
    };
    const text = await post('text');
    expect(typeof text.text === 'string' && typeof text.signUrl === 'string', 'text mode answer lacks text/signUrl');
    // The in-process rows encoded URLs of this length; a different length could mean another QR version.
    const signUrl = text.signUrl as string;
    expect(Buffer.byteLength(signUrl) === Buffer.byteLength(benchUrl), `signUrl ${signUrl} is not as long as ${benchUrl}`);
    const base64 = await post('base64');
    expect(
      typeof base64.base64 === 'string' && Buffer.from(base64.base64, 'base64').subarray(1, 4).toString('latin1') === 'PNG',
      'base64 mode answer is not a PNG',
    );
    const codes: string[] = [];
    for (let i = 0; i < PNG_CODES; i++) {
      const image = await post('image');
      // src is absolute on the service's public base; the load generator needs its path.
      const path = typeof image.src === 'string' ? new URL(image.src).pathname : '';
      expect(/^\/QuickLogin\/Qr\/[A-Za-z0-9_-]{22}\.png$/.test(path), 'image mode answer lacks src');
      codes.push(path);
    }
    const png = await fetchOnce(server.port, 'GET', codes[0]!);
    expect(png.status === 200 && png.headers['content-type'] === 'image/png', `GET ${codes[0]} answered ${png.status}`);

    const issue = (mode: QrMode): LoadOptions => ({
      ...load(server, `http.${mode}`, `tabwire POST /QuickLogin mode=${mode}`),
      method: 'POST',
      path: () => '/QuickLogin',
      headers: JSON_HEADERS,
      body: qrBody(mode),
    });
    const image: LoadOptions = {
      ...load(server, 'http.png', 'tabwire GET /QuickLogin/Qr/{code}.png'),
      method: 'GET',
      path: (i) => codes[i % codes.length]!,
    };

    // A fresh process runs its first seconds unoptimised: warm every path up, uncounted.
    for (const mode of MODES) await runLoad({ ...issue(mode), warmupMs: 0, durationMs: SERVER_WARMUP_MS[mode] });
    await runLoad({ ...image, warmupMs: 0, durationMs: SERVER_WARMUP_MS.png });

    const rows: Bracketed[] = [];
    for (const mode of MODES) {
      // text and base64 decide the budget: re-measured when disturbed; image is context.
      rows.push(await reference.around(server, () => runLoad(issue(mode)), mode !== 'image'));
    }
    rows.push(await reference.around(server, () => runLoad(image), false));
    return rows;
  } finally {
    await child?.stop();
  }
}

/** A `text` row on a server configured apart from the budget's: context only, next to the figures the budget uses. */
export interface TextVariant {
  key: string;
  label: string;
  /** Extra arguments of bench/servers/tabwire.ts: the log level, then `no-encoder-thread`. */
  args: string[];
}

/**
 * - `log info`: the log level operators run by default. Fastify then writes two request lines per
 *   request, synchronously, as to stdout (here to /dev/null: the cheapest reader); it shows what
 *   request logging costs.
 * - `encoder thread off` (config `qrEncoderThread: false`): every request encodes and renders its own
 *   code on the event loop; it shows what the encoder thread brings on this machine.
 */
export const TEXT_VARIANTS: TextVariant[] = [
  { key: 'http.text.info', label: 'tabwire POST /QuickLogin mode=text, log info', args: ['info'] },
  { key: 'http.text.nothread', label: 'tabwire POST /QuickLogin mode=text, encoder thread off', args: ['silent', 'no-encoder-thread'] },
];

/** One TEXT_VARIANTS row: its own tabwire child, warmed up, then one `text` measurement (not retried). */
export async function tabwireTextVariant(variant: TextVariant, port: number, dir: string, reference: Reference): Promise<Bracketed> {
  let child: ChildServer | undefined;
  try {
    const sqlite = join(dir, `${variant.key}.sqlite`);
    child = await startChild(variant.label, new URL('../../servers/tabwire.ts', import.meta.url), [String(port), sqlite, ...variant.args], { nodeArgs: [...SERVICE_NODE_FLAGS] });
    const server = child;
    const probe = await fetchOnce(server.port, 'POST', '/QuickLogin', { mode: 'text', purpose: 'bench', serviceId: '', tab: '' });
    expect(probe.status === 200, `POST /QuickLogin (${variant.label}) answered ${probe.status}`);
    const issue: LoadOptions = {
      ...load(server, variant.key, variant.label),
      method: 'POST',
      path: () => '/QuickLogin',
      headers: JSON_HEADERS,
      body: qrBody('text'),
    };
    await runLoad({ ...issue, warmupMs: 0, durationMs: SERVER_WARMUP_MS.text });
    return await reference.around(server, () => runLoad(issue), false);
  } finally {
    await child?.stop();
  }
}
