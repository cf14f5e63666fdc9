/**
 * `npm run fuzz [-- --requests N] [--max-seconds S] [--concurrency C] [--seed X] [--ws-share F]
 *  [--part body|request|any] [--routes REGEX]
 *  [--url URL [--pid PID] [--api-key K | --user U --password P] [--component-domain D]]`
 *
 * Sends generated bad input (the generators of the suite's fuzz test, test/fuzz/) at every route
 * and the WebSocket of a service, at scale: one it starts itself (src/main.ts as a child process
 * on a loopback port) or the one at --url. Prints a status histogram, per-route counts, every
 * failure class with sample requests, the errors the server logged, and its memory before and
 * after. Exits 1 on any 5xx, any 4xx that is not catalogue problem+json, a WebSocket closed with
 * 1011, a valid request refused, a guarded route answered without a valid token, a stored stanza
 * that is not XML, or a server that died. See docs/reliability.md.
 */
import { rmSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import fc from 'fast-check';
import { openTab, prepareContext, refreshContext, releaseContext, requestCode, type FuzzContext } from '../test/fuzz/context.js';
import { anyCase, type DamagedPart, type FuzzCase } from '../test/fuzz/generators.js';
import { runCase } from '../test/fuzz/run-case.js';
import { exchange, type Target } from '../test/fuzz/wire.js';
import { FuzzTally, printTally, serverErrors } from './fuzz-report.js';
import { processMemory, startFuzzServer, type FuzzServer } from './fuzz-server.js';

const { values: args } = parseArgs({
  options: {
    requests: { type: 'string', default: '100000' },
    'max-seconds': { type: 'string', default: '600' },
    concurrency: { type: 'string', default: '32' },
    seed: { type: 'string' },
    'ws-share': { type: 'string', default: '0.05' },
    part: { type: 'string', default: 'any' },
    routes: { type: 'string' },
    url: { type: 'string' },
    pid: { type: 'string' },
    'api-key': { type: 'string' },
    user: { type: 'string' },
    password: { type: 'string' },
    'component-domain': { type: 'string' },
  },
});

const requests = Number(args.requests);
const maxSeconds = Number(args['max-seconds']);
const concurrency = Number(args.concurrency);
const wsShare = Number(args['ws-share']);
const seed = args.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(args.seed);
for (const [name, v] of Object.entries({ requests, 'max-seconds': maxSeconds, concurrency, seed })) {
  if (!Number.isSafeInteger(v) || v <= 0) throw new Error(`--${name} must be a positive integer`);
}
if (!(wsShare >= 0 && wsShare <= 1)) throw new Error('--ws-share must be between 0 and 1');
const part = args.part as DamagedPart;
if (!['body', 'request', 'any'].includes(part)) throw new Error('--part must be body, request or any');
const routes = args.routes === undefined ? undefined : new RegExp(args.routes);

const kib = (m: { rssKiB: number; peakKiB: number } | undefined) =>
  m === undefined ? 'n/a' : `RSS ${(m.rssKiB / 1024).toFixed(1)} MiB (peak ${(m.peakKiB / 1024).toFixed(1)} MiB)`;

async function healthy(target: Target): Promise<boolean> {
  const outcome = await exchange(target, { method: 'GET', target: '/healthz', headers: [] }, { timeoutMs: 5_000 });
  return outcome.kind === 'answer' && outcome.answer.status === 200;
}

/** The normal flow with the service's development identity (devApproval): tab, QR code, approval, SignatureReceived. */
async function devLogin(ctx: FuzzContext): Promise<string> {
  const tab = await openTab(ctx.wsUrl);
  try {
    const received = new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), 10_000);
      tab.socket.on('message', (data) => {
        if ((JSON.parse(data.toString()) as { type?: string }).type === 'SignatureReceived') {
          clearTimeout(timer);
          resolve(true);
        }
      });
    });
    const code = await requestCode(ctx.baseUrl, tab.tabId, tab.cookie, 'After fuzzing');
    const approved = await fetch(`${ctx.baseUrl}/QuickLogin/Sign/${code}/Dev`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ decision: 'approve' }),
    });
    if (approved.status === 404) return 'skipped (development approval is not enabled on this service)';
    if (!approved.ok) return `FAILED: approval answered ${approved.status} ${await approved.text()}`;
    return (await received) ? 'ok (SignatureReceived arrived)' : 'FAILED: no SignatureReceived within 10 s';
  } finally {
    tab.socket.close();
  }
}

async function main(): Promise<number> {
  let server: FuzzServer | undefined;
  let baseUrl = args.url?.replace(/\/$/, '');
  if (baseUrl === undefined) {
    server = await startFuzzServer();
    baseUrl = server.baseUrl;
  }
  const pid = server?.pid ?? (args.pid === undefined ? undefined : Number(args.pid));
  const memory = () => server?.memory() ?? (pid === undefined ? undefined : processMemory(pid));
  const url = new URL(baseUrl);
  const componentDomain = args['component-domain'] ?? server?.componentDomain ?? `agents.${url.hostname}`;
  const target: Target = { host: url.hostname, port: Number(url.port || 80) };

  console.log(`fuzz: ${requests} cases at ${baseUrl}${server ? ` (pid ${server.pid}, log ${server.logFile})` : ''}`);
  console.log(`      seed ${seed}, concurrency ${concurrency}, WebSocket share ${wsShare}, damaged part: ${part}${routes ? `, routes /${routes.source}/` : ''}, at most ${maxSeconds} s`);
  const ctx = await prepareContext({
    baseUrl,
    componentDomain,
    ...(args['api-key'] ? { apiKey: args['api-key'] } : {}),
    ...(args.user ? { userName: args.user, password: args.password ?? '' } : {}),
    ...(server ? { oidcClient: server.oidcClient } : {}),
  });
  if (ctx.jwt === undefined) console.log('      no account could log in: routes behind the bearer guard see bad tokens only');
  const before = memory();
  console.log(`      server before: ${kib(before)}`);

  const tally = new FuzzTally();
  const started = Date.now();
  const deadline = started + maxSeconds * 1000;
  let issued = 0;
  let died: string | undefined;
  let batch: FuzzCase[] = [];
  let batchNo = 0;
  let refreshing: Promise<void> | undefined;
  let lastRefresh = Date.now();

  /** Cases come in batches of a derived seed, so memory stays small and any batch can be regenerated. */
  const next = async (): Promise<FuzzCase | undefined> => {
    if (issued >= requests || Date.now() > deadline || died !== undefined) return undefined;
    if (batch.length === 0) {
      // A fresh tab and code every minute: the fuzzer takes tabs over and signs or expires codes.
      if (Date.now() - lastRefresh > 60_000 && !refreshing) {
        lastRefresh = Date.now();
        refreshing = refreshContext(ctx).catch((err: unknown) => console.log(`      context refresh failed: ${(err as Error).message}`));
      }
      if (refreshing) await refreshing;
      refreshing = undefined;
      if (batch.length === 0) batch = fc.sample(anyCase(ctx, { wsShare, part, ...(routes ? { routes } : {}) }), { seed: seed + batchNo++, numRuns: 200 });
    }
    issued++;
    return batch.pop();
  };

  const watchdog = setInterval(() => {
    void (async () => {
      const exited = server?.exited();
      if (exited !== undefined) died = `the service exited (${exited})`;
      else if (!(await healthy(target)) && !(await healthy(target))) died = 'the service stopped answering /healthz';
      const elapsed = (Date.now() - started) / 1000;
      const bad = tally.count(() => true);
      console.log(`      ${tally.total} done in ${elapsed.toFixed(0)} s (${(tally.total / elapsed).toFixed(0)}/s), failures so far: ${bad}, ${kib(memory())}`);
    })();
  }, 10_000);

  const worker = async () => {
    for (let c = await next(); c !== undefined; c = await next()) {
      const at = performance.now();
      try {
        const seen = await runCase(target, ctx, c, { timeoutMs: 30_000 });
        tally.add(seen, performance.now() - at);
      } catch (err) {
        tally.add({ route: c.route, outcome: `none ${(err as Error).message.slice(0, 40)}`, request: '' }, performance.now() - at);
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  clearInterval(watchdog);
  const seconds = (Date.now() - started) / 1000;

  const up = died === undefined && server?.exited() === undefined && (await healthy(target));
  const login = up ? await devLogin(ctx).catch((err: unknown) => `FAILED: ${(err as Error).message}`) : 'not tried (service down)';
  const after = memory();
  releaseContext(ctx);

  printTally(tally);
  const fiveXX = tally.count('server_error');
  const wsInternal = tally.count('websocket_internal_error');
  const refused = tally.count('valid_request_refused');
  const bypassed = tally.count('guard_bypassed');
  const badXml = tally.count('invalid_xml_stored');
  const notProblem = tally.count((k) => (k.startsWith('problem_') || k === 'not_problem_json'));
  console.log('\nSummary');
  const stoppedEarly = tally.total < requests ? ` (stopped early: ${died ?? `the ${maxSeconds} s limit`})` : '';
  console.log(`  cases            ${tally.total} of ${requests} in ${seconds.toFixed(1)} s (${(tally.total / seconds).toFixed(0)}/s), seed ${seed}${stoppedEarly}`);
  console.log(`  5xx              ${fiveXX}`);
  console.log(`  4xx not catalogue problem+json  ${notProblem}`);
  console.log(`  WebSocket 1011   ${wsInternal}`);
  console.log(`  valid requests refused  ${refused}`);
  console.log(`  guard bypassed   ${bypassed}`);
  console.log(`  stored stanzas that are not XML  ${badXml}`);
  console.log(`  service          ${up ? 'up, /healthz 200' : `DOWN: ${died ?? 'no /healthz answer'}`}`);
  console.log(`  normal login     ${login}`);
  console.log(`  server memory    before: ${kib(before)}; after: ${kib(after)}`);

  if (server) {
    const errors = serverErrors(server.logFile);
    if (errors.length > 0) {
      console.log(`\nErrors the service logged (${server.logFile}):`);
      for (const e of errors.slice(0, 15)) console.log(`  ${pad(e.count)} × ${e.message}${e.stack ? `\n          ${e.stack}` : ''}`);
    }
    await server.stop();
  }
  const failed = tally.count(() => true) > 0 || !up || login.startsWith('FAILED');
  // Keep the database and log of a failed run to look at; a clean run leaves nothing behind.
  if (server && !failed) rmSync(server.dir, { recursive: true, force: true });
  else if (server) console.log(`\nKept ${server.dir} (database and server.log) for inspection.`);
  return failed ? 1 : 0;
}

const pad = (n: number) => String(n).padStart(7);

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err);
    process.exit(2);
  },
);
