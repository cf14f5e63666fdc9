/**
 * OpenID Connect login benchmark (npm run bench -- oidc-login): the server CPU of a whole OpenID Connect login
 * (authorization, login page, QR, signature, completion, code at the relying party, token exchange, userinfo)
 * next to a plain QuickLogin login's (tab, QR, signature, SignatureReceived), both against one tabwire child
 * process (bench/servers/oidc-tabwire.ts) on loopback, its CPU (every thread) read from /proc. The steps are
 * in bench/lib/oidc/flows.ts. Whole rounds of each alternate; then one round of each is taken step by step to
 * show where an OpenID Connect login's CPU goes. No budget: the ratio is recorded. See
 * docs/benchmarks.md#oidc-login. BENCH_OIDC_LOGINS sets the logins per round (default 200).
 */
import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { systemClock } from '../src/clock.js';
import { loadConfig } from '../src/config/load.js';
import { ensureDevIdentity } from '../src/identity/dev-identity.js';
import { SERVICE_NODE_FLAGS } from '../src/node-flags.js';
import { openStore } from '../src/store/open.js';
import { machineLine, revision, versionOf, waitForQuiet } from './lib/common.js';
import { oidcFlow, quickLoginFlow, requestsPerLogin, type FlowContext } from './lib/oidc/flows.js';
import { comparison, side, stepTable, wholeTable } from './lib/oidc/report.js';
import { stepRound, wholeRound, type WholeRound } from './lib/oidc/rounds.js';
import { freePort, startChild } from './lib/processes/child.js';
import { inScratchDir } from './lib/measure/scratch-dir.js';
import type { BenchReport, Benchmark } from './lib/measure/types.js';

/** Logins per measured round: enough for a stable per-login figure, bounded so the run stays short. */
const LOGINS = Number(process.env.BENCH_OIDC_LOGINS ?? 200);
/** Logins of each kind before anything is measured (JIT, the store's statements, the provider's caches). */
const WARMUP = 40;
/** Logins in flight at once: a few people logging in together, not a load test. */
const CONCURRENCY = 4;
/** Whole rounds of each kind, alternating (QuickLogin, OpenID Connect, ...): a drift shows in both. */
const ROUNDS = 3;
const REDIRECT_URI = 'http://127.0.0.1:9/callback';

/** The service's store before it starts: the approved identity that signs, and the relying party. */
async function prepare(port: number, sqliteFile: string): Promise<Omit<FlowContext, 'port'>> {
  const config = loadConfig({}, { port, sqliteFile, logLevel: 'silent' });
  const store = await openStore(config);
  try {
    const signer = await ensureDevIdentity(store, systemClock, config.legalDomain);
    const client = { clientId: `bench-${randomBytes(6).toString('base64url')}`, clientSecret: randomBytes(32).toString('base64url'), redirectUri: REDIRECT_URI };
    const inserted = await store.oidcClients.insert({
      clientId: client.clientId,
      clientSecret: client.clientSecret,
      tokenAuth: 'client_secret_basic',
      subjectType: 'public',
      idTokenAlg: 'EdDSA',
      name: 'Bench Shop',
      redirectUris: [REDIRECT_URI],
      postLogoutRedirectUris: [],
      createdAt: Date.now(),
    });
    if (!inserted) throw new Error('the benchmark client id is taken');
    return { origin: config.publicBaseUrl, signer, client };
  } finally {
    await store.close();
  }
}

export const oidcLogin: Benchmark = {
  name: 'oidc-login',
  description: 'server CPU of a whole OpenID Connect login (authorize to userinfo) next to a plain QuickLogin login',
  async run(): Promise<BenchReport> {
    return inScratchDir(async (dir) => {
      const idleBefore = await waitForQuiet();
      const load = loadavg();
      const port = await freePort();
      const sqliteFile = join(dir, 'oidc.sqlite');
      const ctx: FlowContext = { port, ...(await prepare(port, sqliteFile)) };
      // Started as the service is (src/node-flags.ts), plus BENCH_SERVER_NODE_ARGS (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof").
      const nodeArgs = [...SERVICE_NODE_FLAGS, ...(process.env.BENCH_SERVER_NODE_ARGS ?? '').split(' ').filter(Boolean)];
      const server = await startChild('tabwire', new URL('./servers/oidc-tabwire.ts', import.meta.url), [JSON.stringify({ port, sqliteFile })], { nodeArgs, readyTimeoutMs: 60_000 });
      try {
        await wholeRound(quickLoginFlow, ctx, server, WARMUP, CONCURRENCY);
        await wholeRound(oidcFlow, ctx, server, WARMUP, CONCURRENCY);
        const rounds: WholeRound[] = [];
        for (let r = 0; r < ROUNDS; r++) {
          rounds.push(await wholeRound(quickLoginFlow, ctx, server, LOGINS, CONCURRENCY));
          rounds.push(await wholeRound(oidcFlow, ctx, server, LOGINS, CONCURRENCY));
        }
        const qlSteps = await stepRound(quickLoginFlow, ctx, server, LOGINS, CONCURRENCY);
        const oidcSteps = await stepRound(oidcFlow, ctx, server, LOGINS, CONCURRENCY);
        const ql = side(quickLoginFlow.name, requestsPerLogin(quickLoginFlow), rounds);
        const oidc = side(oidcFlow.name, requestsPerLogin(oidcFlow), rounds);
        return {
          title: oidcLogin.description,
          context: [
            machineLine(),
            `code: ${revision()}; node flags ${nodeArgs.join(' ')}; oidc-provider ${versionOf('oidc-provider')}; one node, SQLite, ID tokens EdDSA, client_secret_basic + PKCE, scope "openid profile email"`,
            `${LOGINS} logins a round after ${WARMUP} of each kind, ${CONCURRENCY} at a time, ${ROUNDS} rounds of each alternating; QR in image mode with its PNG, as the pages ask`,
            `server CPU: the tabwire process, every thread (/proc/<pid>/stat; per step: its getrusage); other processes before the run: ${idleBefore.toFixed(0)}% of a core; load average ${load.map((l) => l.toFixed(2)).join(' ')}`,
          ],
          sections: [
            { heading: 'Whole logins, round by round (other %: CPU of other processes in the window, ! above 10 %)', lines: wholeTable(rounds) },
            { heading: `Per login (medians over the ${ROUNDS} rounds)`, lines: comparison(ql, oidc) },
            { heading: `${quickLoginFlow.name}, step by step (${LOGINS} logins)`, lines: stepTable(qlSteps, ql.cpuMicros) },
            { heading: `${oidcFlow.name}, step by step (${LOGINS} logins)`, lines: stepTable(oidcSteps, oidc.cpuMicros) },
          ],
          measurements: [],
          budgets: [],
        };
      } finally {
        await server.stop();
      }
    });
  },
};
