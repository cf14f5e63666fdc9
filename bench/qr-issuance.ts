/**
 * QR issuance benchmark: how fast tabwire issues QuickLogin codes compared with (a) the raw
 * `qrcode` matrix encoder and (b) a bare Fastify route, all measured in the same run on the same
 * machine. See docs/benchmarks.md for what each figure means.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import QRCode from 'qrcode';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config/load.js';
import { newCode } from '../src/quicklogin/codes.js';
import { encodeQr } from '../src/quicklogin/qr-matrix.js';
import { pngSide, renderPng } from '../src/quicklogin/qr-png.js';
import { renderText } from '../src/quicklogin/qr-text.js';
import type { QrMode } from '../src/quicklogin/quicklogin.js';
import { freePort, startChild, type ChildServer } from './lib/child.js';
import { fetchOnce, runLoad } from './lib/load.js';
import { formatMicros, formatRate, formatRatio, table } from './lib/stats.js';
import { QuietPolicy } from './lib/quiet.js';
import { backgroundLoad } from './lib/sysload.js';
import { measureAsync, measureSync } from './lib/timing.js';
import type { BenchReport, Benchmark, BudgetCheck, Measurement } from './lib/types.js';

/** Settings; the whole benchmark takes about 45 s on 2 cores (plus retries on a busy machine). */
const HTTP = { connections: 32, warmupMs: 500, durationMs: 3_000 };
const IN_PROCESS = { warmupMs: 300, durationMs: 1_500 };
/** Rows where other processes took more than this (% of a core) are flagged as unreliable. */
const OTHER_CPU_LIMIT = 10;
/** Longest wait for a quiet machine before the first measurement. */
const QUIET_WAIT_MS = 10_000;
/** Re-measurements allowed per run when other processes disturb a window (bounds the run time). */
const MAX_RETRIES = 4;
/** Largest accepted difference between the two encodeQr runs (start and end of the benchmark). */
const DRIFT_LIMIT = 0.1;
/** The budget: text and base64 issuance at least this share of the raw matrix rate. */
const BUDGET_SHARE = 0.5;
/** tabwire's default qrModulePixels (src/config/schema.ts); used for the matched qrcode PNG. */
const MODULE_PIXELS = 6;
const QUIET_ZONE = 4;
/** Distinct URLs cycled through, so no run encodes the same text over and over. */
const URL_POOL = 1024;
/** Image-mode codes issued before the PNG measurement; GET cycles through them. */
const PNG_CODES = 256;

const root = new URL('../', import.meta.url);
const versionOf = (pkg: string): string => {
  try {
    return (JSON.parse(readFileSync(new URL(`node_modules/${pkg}/package.json`, root), 'utf8')) as { version: string }).version;
  } catch {
    return '?';
  }
};

/** The code measured: commit, and whether src/ differs from it (figures change with the service). */
const revision = (): string => {
  try {
    const git = (...args: string[]) => execFileSync('git', args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    const dirty = git('status', '--porcelain', '--', 'src') !== '';
    return `${git('rev-parse', '--short', 'HEAD')}${dirty ? ' + uncommitted changes in src/' : ''}`;
  } catch {
    return 'unknown (not a git checkout)';
  }
};

const qrBody = (mode: QrMode): Buffer => Buffer.from(JSON.stringify({ mode, purpose: 'bench', serviceId: '', tab: '' }));
const JSON_HEADERS = { 'content-type': 'application/json' };

/** Fails loudly when a server does not answer as the benchmark assumes (a wrong figure is worse than none). */
function expect(condition: boolean, message: string): asserts condition {
  if (!condition) throw new Error(`sanity check failed: ${message}`);
}

async function inProcess(urls: string[], quiet: QuietPolicy): Promise<Measurement[]> {
  const at = (i: number): string => urls[i % urls.length]!;
  const bytes = (i: number) => [{ data: Buffer.from(at(i), 'utf8'), mode: 'byte' as const }];
  const matched = { errorCorrectionLevel: 'M' as const, scale: MODULE_PIXELS, margin: QUIET_ZONE };
  const sample = at(0);
  const auto = QRCode.create(sample);
  const segments = auto.segments.map((seg) => seg.mode.id).join('+');
  const defaultPng = await QRCode.toBuffer(sample);
  const matchedPng = await QRCode.toBuffer(bytes(0), matched);
  const ownPng = renderPng(encodeQr(sample), MODULE_PIXELS);
  const side = pngSide(encodeQr(sample).size, MODULE_PIXELS);
  const px = (png: Buffer): number => png.readUInt32BE(16); // IHDR width

  // Only the figures the budget and the ratios rest on are re-measured when disturbed.
  const decisive = (key: string): boolean => key.startsWith('raw.');
  const sync = (key: string, label: string, unit: string, op: (i: number) => unknown) =>
    quiet.measure(() => measureSync(key, label, unit, op, IN_PROCESS), decisive(key));
  const async = (key: string, label: string, unit: string, op: (i: number) => Promise<unknown>) =>
    quiet.measure(() => measureAsync(key, label, unit, op, IN_PROCESS), decisive(key));

  return [
    await sync('raw.encodeQr', 'encodeQr(url)  [tabwire wrapper, byte mode, EC M]', 'matrix', (i) => encodeQr(at(i))),
    await sync('raw.create', `QRCode.create(url)  [defaults: auto segments ${segments}, v${auto.version}]`, 'matrix', (i) =>
      QRCode.create(at(i)),
    ),
    await sync('render.text', 'encodeQr + renderText  [= text mode work]', 'qr', (i) => renderText(encodeQr(at(i)))),
    await sync('render.png', `encodeQr + renderPng  [1-bit PNG ${side}px, ${ownPng.length} B]`, 'png', (i) =>
      renderPng(encodeQr(at(i)), MODULE_PIXELS),
    ),
    await sync('render.base64', 'encodeQr + renderPng + base64  [= base64 mode work]', 'png', (i) =>
      renderPng(encodeQr(at(i)), MODULE_PIXELS).toString('base64'),
    ),
    await async(
      'qrcode.toBuffer',
      `QRCode.toBuffer(url)  [pngjs RGBA, defaults: ${px(defaultPng)}px, ${defaultPng.length} B]`,
      'png',
      (i) => QRCode.toBuffer(at(i)),
    ),
    await async(
      'qrcode.toBuffer.matched',
      `QRCode.toBuffer(url, byte, M, scale ${MODULE_PIXELS})  [pngjs RGBA ${px(matchedPng)}px, ${matchedPng.length} B]`,
      'png',
      (i) => QRCode.toBuffer(bytes(i), matched),
    ),
  ];
}

/** QuickLogin.requestQr called directly (store insert + rendering, no HTTP), to split a request's cost. */
async function inProcessDomain(dir: string, port: number, quiet: QuietPolicy): Promise<Measurement[]> {
  const config = loadConfig({}, { port, sqliteFile: join(dir, 'in-process.sqlite'), logLevel: 'silent' });
  const app = await buildApp(config);
  try {
    await app.ready();
    const { quickLogin } = app.tabwire;
    const caller = { sessionHash: null, origin: null };
    const rows: Measurement[] = [];
    for (const mode of ['text', 'base64', 'image'] as const) {
      rows.push(
        await quiet.measure(() =>
          measureAsync(
            `domain.${mode}`,
            `quickLogin.requestQr(${mode})  [code + SQLite insert + render, no HTTP]`,
            'code',
            () => quickLogin.requestQr({ mode, purpose: 'bench', serviceId: '', tab: '' }, caller),
            IN_PROCESS,
          ),
          false,
        ),
      );
    }
    return rows;
  } finally {
    await app.close();
  }
}

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

async function bareFastify(port: number, quiet: QuietPolicy): Promise<Measurement> {
  let child: ChildServer | undefined;
  try {
    child = await startChild('bare fastify', new URL('./servers/bare.ts', import.meta.url), [String(port)]);
    const server = child;
    const probe = await fetchOnce(server.port, 'POST', '/bare', { mode: 'text', purpose: 'bench', serviceId: '', tab: '' });
    expect(probe.status === 200, `POST /bare answered ${probe.status}`);
    return await quiet.measure(() =>
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

interface TabwireRun {
  rows: Measurement[];
  signUrl: string;
}

async function tabwire(port: number, dir: string, quiet: QuietPolicy, benchUrl: string): Promise<TabwireRun> {
  let child: ChildServer | undefined;
  try {
    child = await startChild('tabwire', new URL('./servers/tabwire.ts', import.meta.url), [String(port), join(dir, 'tabwire.sqlite')]);
    const server = child;

    // Sanity: every mode answers as SPEC.md "QR response" says, before anything is timed.
    const post = async (mode: QrMode): Promise<Record<string, unknown>> => {
      const r = await fetchOnce(server.port, 'POST', '/QuickLogin', { mode, purpose: 'bench', serviceId: '', tab: '' });
      expect(r.status === 200, `POST /QuickLogin (${mode}) answered ${r.status}: ${r.body.toString('utf8').slice(0, 300)}`);
      return JSON.parse(r.body.toString('utf8')) as Record<string, unknown>;
    };
    const text = await post('text');
    expect(typeof text.text === 'string' && typeof text.signUrl === 'string', 'text mode answer lacks text/signUrl');
    const signUrl = text.signUrl as string;
    // The in-process rows encoded URLs of this length; a different length could mean another QR version.
    expect(Buffer.byteLength(signUrl) === Buffer.byteLength(benchUrl), `signUrl ${signUrl} is not as long as ${benchUrl}`);
    const base64 = await post('base64');
    expect(
      typeof base64.base64 === 'string' && Buffer.from(base64.base64, 'base64').subarray(1, 4).toString('latin1') === 'PNG',
      'base64 mode answer is not a PNG',
    );
    const codes: string[] = [];
    for (let i = 0; i < PNG_CODES; i++) {
      const image = await post('image');
      expect(typeof image.src === 'string' && /^\/QuickLogin\/Qr\/[A-Za-z0-9_-]{22}\.png$/.test(image.src), 'image mode answer lacks src');
      codes.push(image.src as string);
    }
    const png = await fetchOnce(server.port, 'GET', codes[0]!);
    expect(png.status === 200 && png.headers['content-type'] === 'image/png', `GET ${codes[0]} answered ${png.status}`);

    const rows: Measurement[] = [];
    for (const mode of ['text', 'base64', 'image'] as const) {
      rows.push(
        await quiet.measure(() =>
          runLoad({
            ...load(server, `http.${mode}`, `tabwire POST /QuickLogin mode=${mode}`),
            method: 'POST',
            path: () => '/QuickLogin',
            headers: JSON_HEADERS,
            body: qrBody(mode),
          }),
          mode !== 'image',
        ),
      );
    }
    rows.push(
      await quiet.measure(() =>
        runLoad({
          ...load(server, 'http.png', 'tabwire GET /QuickLogin/Qr/{code}.png'),
          method: 'GET',
          path: (i) => codes[i % codes.length]!,
        }),
        false,
      ),
    );
    return { rows, signUrl };
  } finally {
    await child?.stop();
  }
}

function build(
  measurements: Measurement[],
  context: string[],
): Pick<BenchReport, 'sections' | 'budgets'> {
  const get = (key: string): Measurement => {
    const m = measurements.find((x) => x.key === key);
    if (!m) throw new Error(`no measurement ${key}`);
    return m;
  };
  // Reference: the faster of the two encodeQr runs (the slower one was disturbed), so the budget is never eased by noise.
  const rawBefore = get('raw.encodeQr');
  const rawAfter = get('raw.encodeQr.after');
  const raw = rawAfter.rate > rawBefore.rate ? rawAfter : rawBefore;
  const drift = Math.abs(rawBefore.rate - rawAfter.rate) / raw.rate;
  context.push(
    `reference encodeQr rate: ${formatRate(raw.rate)}/s (before the HTTP runs ${formatRate(rawBefore.rate)}, after ${formatRate(rawAfter.rate)}: ${(drift * 100).toFixed(0)}% apart)`,
  );
  if (drift > DRIFT_LIMIT) {
    context.push(`WARNING: the machine's speed drifted by more than ${DRIFT_LIMIT * 100}% during the run; ratios are unreliable, rerun.`);
  }
  const create = get('raw.create');
  const bare = get('http.bare');
  const perOp = (m: Measurement): number => 1e6 / m.rate;
  const other = (m: Measurement): string =>
    m.otherCpuPercent === undefined ? '' : `${m.otherCpuPercent.toFixed(0)}%${m.otherCpuPercent > OTHER_CPU_LIMIT ? ' !' : ''}`;

  const inProcessRows = measurements
    .filter((m) => !m.key.startsWith('http.'))
    .map((m) => [
      m.label,
      formatRate(m.rate),
      `${m.unit}/s`,
      formatMicros(perOp(m)),
      formatRatio(m.rate / raw.rate),
      m.cpuPercent === undefined ? '' : `${m.cpuPercent.toFixed(0)}%`,
      other(m),
    ]);

  const httpRows = measurements
    .filter((m) => m.key.startsWith('http.'))
    .map((m) => [
      m.label,
      formatRate(m.rate),
      formatRatio(m.rate / bare.rate),
      formatRatio(m.rate / raw.rate),
      formatRatio(m.rate / create.rate),
      m.latencyMs ? m.latencyMs.p50.toFixed(1) : '',
      m.latencyMs ? m.latencyMs.p99.toFixed(1) : '',
      m.cpuPercent === undefined ? '' : `${m.cpuPercent.toFixed(0)}%`,
      formatMicros(m.cpuMicrosPerOp),
      m.clientCpuPercent === undefined ? '' : `${m.clientCpuPercent.toFixed(0)}%`,
      other(m),
      String(m.errors ?? 0),
    ]);

  // Where one request's server CPU goes: measured pieces, each as CPU µs per operation.
  const micros = (m: Measurement): number => m.cpuMicrosPerOp ?? perOp(m);
  const breakdownRows: string[][] = [];
  const workOf: Record<'text' | 'base64' | 'image', Measurement | undefined> = {
    text: get('render.text'),
    base64: get('render.base64'),
    image: undefined,
  };
  for (const mode of ['text', 'base64', 'image'] as const) {
    const http = get(`http.${mode}`);
    const domain = get(`domain.${mode}`);
    const work = workOf[mode];
    const encode = work ? micros(raw) : 0;
    // Differences of separately measured figures: tiny parts can come out slightly negative.
    const render = work ? Math.max(0, micros(work) - micros(raw)) : 0;
    const store = micros(domain) - encode - render;
    const total = http.cpuMicrosPerOp ?? Number.NaN;
    const httpPart = total - micros(domain);
    breakdownRows.push([
      `mode=${mode}`,
      formatMicros(total),
      formatMicros(encode),
      formatMicros(render),
      formatMicros(store),
      formatMicros(httpPart),
      formatMicros(bare.cpuMicrosPerOp),
    ]);
  }

  const budgets: BudgetCheck[] = (['text', 'base64'] as const).map((mode) => {
    const m = get(`http.${mode}`);
    const share = m.rate / raw.rate;
    const needed = raw.rate * BUDGET_SHARE;
    const met = share >= BUDGET_SHARE;
    const vsCreate = `; vs QRCode.create(url) defaults: ${formatRatio(m.rate / create.rate)}`;
    return {
      name: `mode=${mode} issuance >= ${BUDGET_SHARE * 100}% of the raw encodeQr rate`,
      met,
      detail: met
        ? `${formatRate(m.rate)} req/s = ${formatRatio(share)} of ${formatRate(raw.rate)} matrices/s (needs ${formatRate(needed)})${vsCreate}`
        : `${formatRate(m.rate)} req/s = ${formatRatio(share)} of ${formatRate(raw.rate)} matrices/s; short by ${formatRate(needed - m.rate)} req/s (${((1 - m.rate / needed) * 100).toFixed(0)}% below the ${formatRate(needed)} needed)${vsCreate}`,
    };
  });
  const errors = measurements.reduce((n, m) => n + (m.errors ?? 0), 0);
  if (errors > 0) context.push(`WARNING: ${errors} failed requests; see the errors column and notes.`);
  // On 2 cores anything else running takes CPU from the server or the generator.
  const disturbed = measurements.filter((m) => (m.otherCpuPercent ?? 0) > OTHER_CPU_LIMIT);
  if (disturbed.length > 0) {
    context.push(
      `WARNING: other processes used > ${OTHER_CPU_LIMIT}% of a core during ${disturbed.length} measurement(s) (marked !); rerun on a quiet machine.`,
    );
  }
  const notes = measurements.filter((m) => m.note).map((m) => `${m.label}: ${m.note}`);

  return {
    sections: [
      {
        heading: 'In-process, one thread of this process (no server running); vs encodeQr = vs the reference rate',
        lines: table(['operation', 'rate', 'unit', 'µs/op', 'vs encodeQr', 'CPU', 'other'], inProcessRows),
      },
      {
        heading: `HTTP over loopback: ${HTTP.connections} keep-alive connections, ${HTTP.warmupMs} ms warm-up + ${HTTP.durationMs} ms measured; server in a child process`,
        lines: [
          ...table(
            ['request', 'req/s', 'vs bare', 'vs encodeQr', 'vs create', 'p50 ms', 'p99 ms', 'srv CPU', 'srv µs/req', 'gen CPU', 'other', 'errors'],
            httpRows,
          ),
        ],
      },
      {
        heading: 'Where the server CPU of one request goes (µs, from the figures above)',
        lines: [
          ...table(['request', 'server CPU', 'encode', 'render', 'code+store', 'HTTP+Fastify', '(bare req)'], breakdownRows),
          'server CPU = child process CPU / requests; encode, render = in-process rows; code+store = requestQr',
          'minus encode and render; HTTP+Fastify = server CPU minus requestQr; (bare req) = bare route CPU/req.',
        ],
      },
      ...(notes.length > 0 ? [{ heading: 'Notes', lines: notes }] : []),
    ],
    budgets,
  };
}

export const qrIssuance: Benchmark = {
  name: 'qr-issuance',
  description: 'QuickLogin QR issuance vs the raw qrcode encoder and a bare Fastify route',
  async run(): Promise<BenchReport> {
    const dir = mkdtempSync(join(tmpdir(), 'tabwire-bench-'));
    // Also on an interrupt, which ends the process without running `finally` (bench/lib/child.ts).
    const removeDir = (): void => rmSync(dir, { recursive: true, force: true });
    process.once('exit', removeDir);
    try {
      // On 2 cores a busy machine spoils every figure: wait (bounded) for it to go quiet first.
      let idle = await backgroundLoad();
      for (let waited = 0; idle > OTHER_CPU_LIMIT && waited < QUIET_WAIT_MS; waited += 1_000) {
        if (waited === 0) console.log(`  other processes use ${idle.toFixed(0)}% of a core; waiting up to ${QUIET_WAIT_MS / 1000} s for quiet ...`);
        idle = await backgroundLoad();
      }
      // Ports are chosen first so the in-process URLs have the signUrl's exact length (and QR version).
      const tabwirePort = await freePort();
      const barePort = await freePort();
      const base = `http://127.0.0.1:${tabwirePort}`;
      const urls = Array.from({ length: URL_POOL }, () => `${base}/QuickLogin/Sign/${newCode()}`);
      const matrix = encodeQr(urls[0]!);
      const version = (matrix.size - 17) / 4;

      const quiet = new QuietPolicy(OTHER_CPU_LIMIT, MAX_RETRIES);
      const measurements: Measurement[] = [...(await inProcess(urls, quiet)), ...(await inProcessDomain(dir, tabwirePort, quiet))];
      measurements.push(await bareFastify(barePort, quiet));
      const service = await tabwire(tabwirePort, dir, quiet, urls[0]!);
      measurements.push(...service.rows);
      // The reference rate again, now that the servers are gone: a virtual machine's speed drifts
      // with its neighbours, and a ratio of two figures taken at different times inherits that.
      measurements.push(
        await quiet.measure(() =>
          measureSync('raw.encodeQr.after', 'encodeQr(url) again, after the HTTP runs', 'matrix', (i) => encodeQr(urls[i % URL_POOL]!), IN_PROCESS),
        ),
      );

      const cpu = cpus();
      const context = [
        `machine: ${cpu.length} cores (${cpu[0]?.model ?? 'unknown CPU'}), ${process.platform}/${process.arch}, Node ${process.version}`,
        `tabwire: ${revision()}`,
        `libraries: fastify ${versionOf('fastify')}, qrcode ${versionOf('qrcode')}, better-sqlite3 ${versionOf('better-sqlite3')}`,
        `URL encoded: ${urls[0]} (${Buffer.byteLength(urls[0]!)} bytes, byte mode, EC M -> version ${version}, ${matrix.size}x${matrix.size} modules)`,
        `PNG: ${MODULE_PIXELS} px/module, quiet zone ${QUIET_ZONE} -> ${pngSide(matrix.size, MODULE_PIXELS)} px`,
        `idle check before the run: other processes used ${idle.toFixed(0)}% of a core; 'other' columns: the same during each measurement`,
      ];
      return { title: qrIssuance.description, context, measurements, ...build(measurements, context) };
    } finally {
      process.off('exit', removeDir);
      removeDir();
    }
  },
};
