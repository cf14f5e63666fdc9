/**
 * QR issuance benchmark: how fast tabwire issues QuickLogin codes compared with a bare Fastify route
 * (the budget) and with its own matrix encoder `encodeQr` (the essential work, and the in-server
 * reference that detects a machine whose speed moved), all measured in the same run on the same
 * machine. See docs/benchmarks.md for what each figure means.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config/load.js';
import { newCode } from '../src/quicklogin/codes.js';
import { encodeQr } from '../src/quicklogin/qr-matrix.js';
import { pngSide, renderPng } from '../src/quicklogin/qr-png.js';
import { textAnswerJson } from '../src/quicklogin/qr-text.js';
import type { QrMode } from '../src/quicklogin/quicklogin.js';
import { freePort, startChild, type ChildServer } from './lib/child.js';
import { fetchOnce, runLoad, type LoadOptions } from './lib/load.js';
import { QuietPolicy } from './lib/quiet.js';
import { formatMicros, formatRate, formatRatio, table } from './lib/stats.js';
import { backgroundLoad } from './lib/sysload.js';
import { measureInterleaved, type OperationSpec } from './lib/timing.js';
import type { BenchReport, Benchmark, BudgetCheck, Measurement } from './lib/types.js';
import { SERVICE_NODE_FLAGS } from '../src/node-flags.js';

/** Settings; the whole benchmark takes about 70 s on 2 cores (plus retries on a busy machine). */
const HTTP = { connections: 32, warmupMs: 500, durationMs: 3_000 };
/** In-process rows: 5 slices of 250 ms each, taken in turn, after a 200 ms warm-up. */
const IN_PROCESS = { rounds: 5, sliceMs: 250, warmupMs: 200 };
/** The encodeQr reference, measured in the server process next to every HTTP measurement. */
const REFERENCE = { warmupMs: 150, durationMs: 800 };
/**
 * Load on a fresh tabwire before anything is counted (text and base64 2 s each, image and .png 1 s
 * each): a new process needs several seconds of traffic before V8 has optimised its hot paths; with
 * 2.4 s the first measured mode still came out up to 15 % slow.
 */
const SERVER_WARMUP_MS = { text: 2_000, base64: 2_000, image: 1_000, png: 1_000 };
/** Rows where other processes took more than this (% of a core) are flagged as unreliable. */
const OTHER_CPU_LIMIT = 10;
/** Longest wait for a quiet machine before the first measurement. */
const QUIET_WAIT_MS = 10_000;
/** Re-measurements allowed per run when other processes disturb a window (bounds the run time). */
const MAX_RETRIES = 4;
/** Largest accepted difference between the two references around one HTTP measurement. */
const DRIFT_LIMIT = 0.1;
/** The budgets: issuance in each mode at least this share of the bare Fastify route's rate, same run. */
const BUDGET_SHARE: Record<'text' | 'base64', number> = { text: 0.3, base64: 0.25 };
/** tabwire's default qrModulePixels (src/config/schema.ts). */
const MODULE_PIXELS = 6;
const QUIET_ZONE = 4;
/** Distinct URLs cycled through, so no run encodes the same text over and over. */
const URL_POOL = 1024;
/** Image-mode codes issued before the PNG measurement; GET cycles through them. */
const PNG_CODES = 256;
/** Domain calls in flight at once in the in-process rows (as many as the HTTP rows' connections). */
const IN_FLIGHT = HTTP.connections;
const MODES = ['text', 'base64', 'image'] as const;

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

/** An HTTP measurement with the encodeQr reference measured just before and just after it. */
interface Bracketed {
  http: Measurement;
  before: Measurement;
  after: Measurement;
}

/** What one run collects. */
interface Figures {
  inProcess: Measurement[];
  http: Bracketed[];
}

/**
 * The machine's speed drifts (a virtual machine shares its host, and its two cores need not be
 * equally fast), so a request rate is only compared with encodeQr rates measured inside the same
 * server process, while it serves nothing, just before and just after the request run.
 */
class Reference {
  constructor(
    private readonly urlBase: string,
    private readonly quiet: QuietPolicy,
  ) {}

  /**
   * When other processes disturbed any of the three measurements or the reference moved by more
   * than DRIFT_LIMIT, the whole triple is run again (within the run's retry allowance) and the
   * steadiest attempt is kept. `retry: false` for rows that are context only.
   */
  async around(server: ChildServer, run: () => Promise<Measurement>, retry = true): Promise<Bracketed> {
    const once = async (): Promise<Bracketed> => {
      const before = await server.reference(this.urlBase, REFERENCE);
      const http = await run();
      const after = await server.reference(this.urlBase, REFERENCE);
      return { http, before, after };
    };
    if (!retry) return once();
    const over = (m: Measurement): number => Math.max(0, (m.otherCpuPercent ?? 0) - this.quiet.limitPercent) / 100;
    const badness = (b: Bracketed): number => Math.max(0, drift(b) - DRIFT_LIMIT) + over(b.before) + over(b.http) + over(b.after);
    const { value, attempts } = await this.quiet.best(once, badness);
    if (attempts === 1) return value;
    const note = `measured ${attempts}x (with its references) because the machine was busy or its speed moved; kept the steadiest`;
    return { ...value, http: { ...value.http, note: value.http.note ? `${value.http.note}; ${note}` : note } };
  }
}

const mean = (b: Bracketed): number => (b.before.rate + b.after.rate) / 2;
const drift = (b: Bracketed): number => Math.abs(b.before.rate - b.after.rate) / Math.max(b.before.rate, b.after.rate);

/**
 * Everything measured inside this process, interleaved (see measureInterleaved) so the ratios
 * between rows survive the machine's drift: the encoder, the renderers, and QuickLogin.requestQr
 * called directly on a buildApp instance (code, store insert, rendering; no HTTP).
 */
async function inProcess(urls: string[], dir: string, port: number): Promise<Measurement[]> {
  const at = (i: number): string => urls[i % urls.length]!;
  const sample = at(0);
  const ownPng = renderPng(encodeQr(sample), MODULE_PIXELS);
  const side = pngSide(encodeQr(sample).size, MODULE_PIXELS);

  // The encoder thread off: these rows measure the work itself, all of it on this thread.
  const config = loadConfig({}, { port, sqliteFile: join(dir, 'in-process.sqlite'), logLevel: 'silent', qrEncoderThread: false });
  const app = await buildApp(config);
  try {
    await app.ready();
    const { quickLogin } = app.tabwire;
    const caller = { sessionHash: null, origin: null };
    // 32 calls at once, as the HTTP rows have 32 requests in flight: the group commit then writes
    // them in one transaction, as it does under load (one call at a time would pay a commit each).
    const requestQr = (mode: QrMode): OperationSpec => ({
      key: `domain.${mode}`,
      label: `quickLogin.requestQr(${mode}) x${IN_FLIGHT}  [code + SQLite insert + render, no HTTP]`,
      unit: 'code',
      op: () => Promise.all(Array.from({ length: IN_FLIGHT }, () => quickLogin.requestQr({ mode, purpose: 'bench', serviceId: '', tab: '' }, caller))),
      async: true,
    });
    const measured = await measureInterleaved(
      [
        { key: 'raw.encodeQr', label: `encodeQr(url)  [qr ${versionOf('qr')}, byte mode, EC M]`, unit: 'matrix', op: (i) => encodeQr(at(i)) },
        { key: 'render.text', label: 'encodeQr + textAnswerJson  [= text mode work]', unit: 'qr', op: (i) => textAnswerJson(at(i), encodeQr(at(i))) },
        {
          key: 'render.png',
          label: `encodeQr + renderPng  [1-bit PNG ${side}px, ${ownPng.length} B]`,
          unit: 'png',
          op: (i) => renderPng(encodeQr(at(i)), MODULE_PIXELS),
        },
        {
          key: 'render.base64',
          label: 'encodeQr + renderPng + base64  [= base64 mode work]',
          unit: 'png',
          op: (i) => renderPng(encodeQr(at(i)), MODULE_PIXELS).toString('base64'),
        },
        ...MODES.map(requestQr),
      ],
      { ...IN_PROCESS, otherLimitPercent: OTHER_CPU_LIMIT },
    );
    // The domain rows timed batches of IN_FLIGHT calls: per code.
    return measured.map((m) =>
      m.key.startsWith('domain.')
        ? { ...m, count: m.count * IN_FLIGHT, rate: m.rate * IN_FLIGHT, cpuMicrosPerOp: m.cpuMicrosPerOp === undefined ? undefined : m.cpuMicrosPerOp / IN_FLIGHT }
        : m,
    );
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

async function bareFastify(port: number, reference: Reference): Promise<Bracketed> {
  let child: ChildServer | undefined;
  try {
    child = await startChild('bare fastify', new URL('./servers/bare.ts', import.meta.url), [String(port)]);
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

async function tabwire(port: number, dir: string, reference: Reference, benchUrl: string): Promise<Bracketed[]> {
  let child: ChildServer | undefined;
  try {
    child = await startChild('tabwire', new URL('./servers/tabwire.ts', import.meta.url), [String(port), join(dir, 'tabwire.sqlite')], { nodeArgs: [...SERVICE_NODE_FLAGS] });
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
interface TextVariant {
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
const TEXT_VARIANTS: TextVariant[] = [
  { key: 'http.text.info', label: 'tabwire POST /QuickLogin mode=text, log info', args: ['info'] },
  { key: 'http.text.nothread', label: 'tabwire POST /QuickLogin mode=text, encoder thread off', args: ['silent', 'no-encoder-thread'] },
];

async function tabwireTextVariant(variant: TextVariant, port: number, dir: string, reference: Reference): Promise<Bracketed> {
  let child: ChildServer | undefined;
  try {
    const sqlite = join(dir, `${variant.key}.sqlite`);
    child = await startChild(variant.label, new URL('./servers/tabwire.ts', import.meta.url), [String(port), sqlite, ...variant.args], { nodeArgs: [...SERVICE_NODE_FLAGS] });
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

function build(figures: Figures, context: string[]): Pick<BenchReport, 'sections' | 'budgets'> {
  const get = (key: string): Measurement => {
    const m = figures.inProcess.find((x) => x.key === key);
    if (!m) throw new Error(`no measurement ${key}`);
    return m;
  };
  const bracket = (key: string): Bracketed => {
    const b = figures.http.find((x) => x.http.key === key);
    if (!b) throw new Error(`no measurement ${key}`);
    return b;
  };
  const raw = get('raw.encodeQr');
  const bare = bracket('http.bare').http;
  const perOp = (m: Measurement): number => 1e6 / m.rate;
  const micros = (m: Measurement): number => m.cpuMicrosPerOp ?? perOp(m);
  const percent = (value: number | undefined): string => (value === undefined ? '' : `${value.toFixed(0)}%`);
  const other = (m: Measurement): string =>
    m.otherCpuPercent === undefined ? '' : `${m.otherCpuPercent.toFixed(0)}%${m.otherCpuPercent > OTHER_CPU_LIMIT ? ' !' : ''}`;
  const drifted = (b: Bracketed): boolean => drift(b) > DRIFT_LIMIT;

  const inProcessRows = figures.inProcess.map((m) => [
    m.label,
    formatRate(m.rate),
    `${m.unit}/s`,
    formatMicros(perOp(m)),
    formatRatio(m.rate / raw.rate),
    percent(m.cpuPercent),
    other(m),
  ]);

  const httpRows = figures.http.map((b) => {
    const m = b.http;
    return [
      m.label,
      formatRate(m.rate),
      formatRatio(m.rate / bare.rate),
      `${formatRate(b.before.rate)} / ${formatRate(b.after.rate)}${drifted(b) ? ' ~' : ''}`,
      formatRatio(m.rate / mean(b)),
      m.latencyMs ? m.latencyMs.p50.toFixed(1) : '',
      m.latencyMs ? m.latencyMs.p99.toFixed(1) : '',
      percent(m.cpuPercent),
      formatMicros(m.cpuMicrosPerOp),
      percent(m.clientCpuPercent),
      other(m),
      String(m.errors ?? 0),
    ];
  });

  // Where one request's server CPU goes: measured pieces, each as CPU µs per operation. The
  // encoding cost is the one measured next to the request, the rest comes from the in-process rows.
  const workOf: Record<QrMode, Measurement | undefined> = { text: get('render.text'), base64: get('render.base64'), image: undefined };
  const breakdownRows = MODES.map((mode) => {
    const b = bracket(`http.${mode}`);
    const domain = get(`domain.${mode}`);
    const work = workOf[mode];
    const encode = work ? (micros(b.before) + micros(b.after)) / 2 : 0;
    // Differences of separately measured figures: tiny parts can come out slightly negative.
    const render = work ? Math.max(0, micros(work) - micros(raw)) : 0;
    const store = Math.max(0, micros(domain) - (work ? micros(work) : 0));
    const total = b.http.cpuMicrosPerOp ?? Number.NaN;
    return [
      `mode=${mode}`,
      formatMicros(total),
      formatMicros(encode),
      formatMicros(render),
      formatMicros(store),
      formatMicros(total - encode - render - store),
      formatMicros(bare.cpuMicrosPerOp),
    ];
  });

  // The bare route runs in another process before tabwire's: its references and the mode's tell
  // whether the machine's speed moved in between (then the plain ratio is not to be trusted).
  const bareBracket = bracket('http.bare');
  const budgets: BudgetCheck[] = (['text', 'base64'] as const).map((mode) => {
    const b = bracket(`http.${mode}`);
    const share = b.http.rate / bare.rate;
    const budget = BUDGET_SHARE[mode];
    const needed = bare.rate * budget;
    const met = share >= budget;
    const moved = Math.abs(mean(b) - mean(bareBracket)) / Math.max(mean(b), mean(bareBracket));
    const corrected = b.http.rate / mean(b) / (bare.rate / mean(bareBracket));
    const measured = `${formatRate(b.http.rate)} req/s = ${formatRatio(share)} of the bare route's ${formatRate(bare.rate)} req/s`;
    const gap = met
      ? `needs ${formatRate(needed)}`
      : `short by ${formatRate(needed - b.http.rate)} req/s, ${((1 - b.http.rate / needed) * 100).toFixed(0)}% below the ${formatRate(needed)} needed`;
    const problems = [
      ...(drifted(b) ? [`encodeQr moved ${(drift(b) * 100).toFixed(0)}% across the run`] : []),
      ...(moved > DRIFT_LIMIT ? [`encodeQr ran ${(moved * 100).toFixed(0)}% apart around the bare route and around this mode`] : []),
      ...[bareBracket.http, b.before, b.http, b.after].filter((m) => (m.otherCpuPercent ?? 0) > OTHER_CPU_LIMIT).map((m) => `${m.label} disturbed`),
    ];
    return {
      name: `mode=${mode} issuance >= ${budget * 100}% of the bare Fastify route`,
      met,
      unreliable: problems.length > 0 ? problems.join('; ') : undefined,
      detail: `${measured}; ${gap}; each rate taken relative to encodeQr in its own server: ${formatRatio(corrected)}`,
    };
  });

  const all = [...figures.inProcess, ...figures.http.flatMap((b) => [b.before, b.http, b.after])];
  const errors = all.reduce((n, m) => n + (m.errors ?? 0), 0);
  if (errors > 0) context.push(`WARNING: ${errors} failed requests; see the errors column and notes.`);
  // On 2 cores anything else running takes CPU from the server or the generator.
  const disturbed = all.filter((m) => (m.otherCpuPercent ?? 0) > OTHER_CPU_LIMIT);
  if (disturbed.length > 0) {
    context.push(
      `WARNING: other processes used > ${OTHER_CPU_LIMIT}% of a core during ${disturbed.length} measurement(s) (marked !); rerun on a quiet machine.`,
    );
  }
  const unsteady = figures.http.filter(drifted);
  if (unsteady.length > 0) {
    context.push(
      `WARNING: the encodeQr rate moved by more than ${DRIFT_LIMIT * 100}% across ${unsteady.length} HTTP measurement(s) (marked ~): the machine's speed changed; rerun.`,
    );
  }
  const notes = all.filter((m) => m.note).map((m) => `${m.label}: ${m.note}`);

  return {
    sections: [
      {
        heading: `In-process, one thread of this process (no server running): median of ${IN_PROCESS.rounds} interleaved ${IN_PROCESS.sliceMs} ms slices`,
        lines: table(['operation', 'rate', 'unit', 'µs/op', 'vs encodeQr', 'CPU', 'other'], inProcessRows),
      },
      {
        heading: `HTTP over loopback: ${HTTP.connections} keep-alive connections, ${HTTP.warmupMs} ms warm-up + ${HTTP.durationMs} ms measured; server in a child process`,
        lines: [
          ...table(
            ['request', 'req/s', 'vs bare', 'encodeQr/s before / after', 'vs encodeQr', 'p50 ms', 'p99 ms', 'srv CPU', 'srv µs/req', 'gen CPU', 'other', 'errors'],
            httpRows,
          ),
          'vs encodeQr: req/s over the mean of the encodeQr rates measured inside the server process just before and just after.',
        ],
      },
      {
        heading: 'Where the server CPU of one request goes (µs)',
        lines: [
          ...table(['request', 'server CPU', 'encode', 'render', 'code+store', 'HTTP+Fastify+GC', '(bare req)'], breakdownRows),
          'server CPU = server process CPU / requests, every thread; encode = encodeQr in the server, around the request run;',
          'render and code+store = differences of the in-process rows; HTTP+Fastify+GC = the rest; (bare req) = the bare route.',
          'Under this load the encoder thread encodes and renders most text and base64 codes beside the event loop',
          '(docs/signing.md "Encoder thread"): their encode and render are CPU of the process, not of its event loop.',
        ],
      },
      ...(notes.length > 0 ? [{ heading: 'Notes', lines: notes }] : []),
    ],
    budgets,
  };
}

export const qrIssuance: Benchmark = {
  name: 'qr-issuance',
  description: 'QuickLogin QR issuance vs a bare Fastify route and the matrix encoder',
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
      const urls = Array.from({ length: URL_POOL }, () => `${base}/QuickLogin/Sign/${newCode(Date.now())}`);
      const matrix = encodeQr(urls[0]!);
      const version = (matrix.size - 17) / 4;

      const quiet = new QuietPolicy(OTHER_CPU_LIMIT, MAX_RETRIES);
      const reference = new Reference(`${base}/QuickLogin/Sign/`, quiet);
      const figures: Figures = {
        inProcess: await inProcess(urls, dir, tabwirePort),
        http: [],
      };
      figures.http.push(await bareFastify(barePort, reference));
      figures.http.push(...(await tabwire(tabwirePort, dir, reference, urls[0]!)));
      for (const variant of TEXT_VARIANTS) figures.http.push(await tabwireTextVariant(variant, await freePort(), dir, reference));

      const cpu = cpus();
      const context = [
        `machine: ${cpu.length} cores (${cpu[0]?.model ?? 'unknown CPU'}), ${process.platform}/${process.arch}, Node ${process.version}`,
        `tabwire: ${revision()}`,
        `libraries: fastify ${versionOf('fastify')}, qr ${versionOf('qr')}, better-sqlite3 ${versionOf('better-sqlite3')}`,
        `URL encoded: ${urls[0]} (${Buffer.byteLength(urls[0]!)} bytes, byte mode, EC M -> version ${version}, ${matrix.size}x${matrix.size} modules)`,
        `PNG: ${MODULE_PIXELS} px/module, quiet zone ${QUIET_ZONE} -> ${pngSide(matrix.size, MODULE_PIXELS)} px`,
        `idle check before the run: other processes used ${idle.toFixed(0)}% of a core; 'other' columns: the same during each measurement`,
      ];
      const measurements = [...figures.inProcess, ...figures.http.flatMap((b) => [b.before, b.http, b.after])];
      return { title: qrIssuance.description, context, measurements, ...build(figures, context) };
    } finally {
      process.off('exit', removeDir);
      removeDir();
    }
  },
};
