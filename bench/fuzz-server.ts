import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, openSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { freePort } from './lib/processes/child.js';

/**
 * The service `npm run fuzz` attacks when no --url is given: src/main.ts as a child process (tsx's
 * loader, so it is today's source, not a stale build) on a loopback port, configured only through
 * TABWIRE_* variables, with its own SQLite file and log in a temporary directory. Stopped by pid.
 */
export interface FuzzServer {
  pid: number;
  baseUrl: string;
  /** The temporary directory with the database and `server.log`. */
  dir: string;
  logFile: string;
  componentDomain: string;
  /** A relying party registered with `tabwire oidc client add`, so the fuzzer holds a live OpenID Connect login. */
  oidcClient: { clientId: string; clientSecret: string; redirectUris: string[]; postLogoutRedirectUris: string[] };
  /** Set once the process has exited, with how. */
  exited(): string | undefined;
  /** VmRSS and VmHWM (peak) of the process in KiB, from /proc/<pid>/status; undefined once gone or off Linux. */
  memory(): { rssKiB: number; peakKiB: number } | undefined;
  /** SIGTERM, then SIGKILL after 10 s. */
  stop(): Promise<void>;
}

const root = fileURLToPath(new URL('..', import.meta.url));
const tsxLoader = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;

/** VmRSS and VmHWM of any local process by pid (also used with --pid for a service started elsewhere). */
export function processMemory(pid: number): { rssKiB: number; peakKiB: number } | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'latin1');
    const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1]);
    const rssKiB = field('VmRSS');
    return Number.isFinite(rssKiB) ? { rssKiB, peakKiB: field('VmHWM') } : undefined;
  } catch {
    return undefined;
  }
}

export async function startFuzzServer(o: { readyTimeoutMs?: number } = {}): Promise<FuzzServer> {
  // GET /Events.js serves the built browser script; the service refuses to start without it.
  if (!existsSync(join(root, 'dist', 'public', 'Events.js'))) {
    const built = spawnSync(process.execPath, [join(root, 'scripts', 'build-browser.mjs')], { stdio: 'inherit' });
    if (built.status !== 0) throw new Error('building the browser script failed');
  }
  const dir = mkdtempSync(join(tmpdir(), 'tabwire-fuzz-'));
  const logFile = join(dir, 'server.log');
  const log = openSync(logFile, 'a');
  const port = await freePort();
  const host = '127.0.0.1';
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? dir };
  Object.assign(env, {
    TABWIRE_HOST: host,
    TABWIRE_PORT: String(port),
    TABWIRE_SQLITE_FILE: join(dir, 'tabwire.sqlite'),
    // The fuzzer makes its own account to reach the handlers behind the bearer guard.
    TABWIRE_OPEN_REGISTRATION: 'true',
    // Held long-polls would otherwise take fuzzer slots for 20 s each.
    TABWIRE_LONG_POLL_HOLD_SECONDS: '1',
    // Errors only: a 500's stack trace lands in server.log, where the summary looks for it.
    TABWIRE_LOG_LEVEL: 'error',
  });
  const child = spawn(process.execPath, ['--import', tsxLoader, join(root, 'src', 'main.ts')], { cwd: root, env, stdio: ['ignore', log, log] });
  child.on('error', () => {});
  if (child.pid === undefined) throw new Error('the service did not start');
  const pid = child.pid;
  let exitedHow: string | undefined;
  child.once('exit', (code, signal) => {
    exitedHow = signal ? `signal ${signal}` : `exit code ${code}`;
  });
  // Never outlive the fuzzer, whatever ends it.
  const kill = () => {
    if (exitedHow === undefined) process.kill(pid, 'SIGKILL');
  };
  process.once('exit', kill);

  const baseUrl = `http://${host}:${port}`;
  const deadline = Date.now() + (o.readyTimeoutMs ?? 30_000);
  for (;;) {
    if (exitedHow !== undefined) throw new Error(`the service exited before it was ready (${exitedHow}); see ${logFile}`);
    const ok = await fetch(`${baseUrl}/healthz`).then((r) => r.ok, () => false);
    if (ok) break;
    if (Date.now() > deadline) {
      kill();
      throw new Error(`the service was not ready within ${o.readyTimeoutMs ?? 30_000} ms; see ${logFile}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }

  // Once the service has made its database: the operator's command on it, as docs/oidc.md has it (a confidential client).
  const redirectUri = 'https://rp.fuzz.test/callback';
  const added = spawnSync(process.execPath, ['--import', tsxLoader, join(root, 'src', 'cli', 'main.ts'), 'oidc', 'client', 'add', '--redirect-uri', redirectUri, '--name', 'Fuzz RP'], { cwd: root, env, encoding: 'utf8' });
  if (added.status !== 0) throw new Error(`tabwire oidc client add failed: ${added.stderr}`);
  const registered = JSON.parse(added.stdout) as { client_id: string; client_secret: string };
  const oidcClient = { clientId: registered.client_id, clientSecret: registered.client_secret, redirectUris: [redirectUri], postLogoutRedirectUris: [] };

  const waitExit = (ms: number) =>
    new Promise<boolean>((resolve) => {
      if (exitedHow !== undefined) return resolve(true);
      const timer = setTimeout(() => resolve(false), ms);
      child.once('exit', () => {
        clearTimeout(timer);
        resolve(true);
      });
    });

  return {
    pid,
    baseUrl,
    dir,
    logFile,
    // The default of xmppComponentDomain: agents.<legalDomain>, legalDomain being the public host.
    componentDomain: `agents.${host}`,
    oidcClient,
    exited: () => exitedHow,
    memory: () => (exitedHow === undefined ? processMemory(pid) : undefined),
    async stop() {
      if (exitedHow !== undefined) return;
      process.kill(pid, 'SIGTERM');
      if (!(await waitExit(10_000))) {
        process.kill(pid, 'SIGKILL');
        await waitExit(5_000);
      }
      process.off('exit', kill);
    },
  };
}
