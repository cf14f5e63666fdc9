import { readdirSync, readFileSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll } from 'vitest';
import type { ConfigInput } from '../../src/config/schema.js';
import { startService, type TestService } from './service.js';
import { HOST_A, HOST_B } from './tls.js';
import { DEADLINE_MS, until } from './until.js';

export { HOST_A, HOST_B, selfSignedCertificate } from './tls.js';

const LAUNCH = {
  executablePath: '/usr/bin/chromium',
  headless: true,
  args: [
    '--no-sandbox',
    '--disable-gpu',
    '--disable-quic',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    `--host-resolver-rules=MAP ${HOST_A} 127.0.0.1, MAP ${HOST_B} 127.0.0.1`,
  ],
};

/**
 * Pages and contexts of `browser` wait up to DEADLINE_MS for a navigation, a selector or a function instead of
 * Playwright's 30 s: a loaded 2-core machine once took longer than that to load the wallet behind nginx.
 */
function withDeadlines(browser: Browser): Browser {
  const newContext = browser.newContext.bind(browser);
  const newPage = browser.newPage.bind(browser);
  browser.newContext = async (...args) => {
    const context = await newContext(...args);
    context.setDefaultTimeout(DEADLINE_MS);
    return context;
  };
  browser.newPage = async (...args) => {
    const page = await newPage(...args);
    page.setDefaultTimeout(DEADLINE_MS);
    return page;
  };
  return browser;
}

/** Debian's Chromium (installed by scripts/test), headless, with the flags this closed network needs. */
export async function launchChromium(o: { resolveToLoopback?: string[] } = {}): Promise<Browser> {
  if (!o.resolveToLoopback?.length) return withDeadlines(await chromium.launch(LAUNCH));
  // More names that resolve to this machine (e.g. a proxy's public name); the rules flag is given once.
  const names = [HOST_A, HOST_B, ...o.resolveToLoopback].map((name) => `MAP ${name} 127.0.0.1`).join(', ');
  const args = [...LAUNCH.args.filter((a) => !a.startsWith('--host-resolver-rules=')), `--host-resolver-rules=${names}`];
  return withDeadlines(await chromium.launch({ ...LAUNCH, args }));
}

/** The same Chromium as a process the test can kill (SIGKILL: no pagehide, no Unregister, no clean close). */
export async function launchKillableChromium(): Promise<{ browser: Browser; kill: () => Promise<void> }> {
  const server = await chromium.launchServer(LAUNCH);
  const browser = withDeadlines(await chromium.connect(server.wsEndpoint()));
  return { browser, kill: () => server.kill() };
}

/**
 * A tabwire on loopback (startService with `overrides`) and Chromium, started before the calling file's tests
 * and closed after them (call it at the top level of the file); both are set once beforeAll has run.
 */
export function useServiceAndChromium(overrides: Partial<ConfigInput> = {}): { service: TestService; browser: Browser } {
  const rig = {} as { service: TestService; browser: Browser };
  beforeAll(async () => {
    rig.service = await startService(overrides);
    rig.browser = await launchChromium();
  });
  afterAll(async () => {
    await rig.browser?.close();
    await rig.service?.close();
  });
  return rig;
}

/** One process of a group as /proc tells it: its pid, its state (`T`: stopped by a signal) and its command name. */
export interface GroupProcess {
  pid: number;
  state: string;
  name: string;
}

/** The processes of process group `pgid`, from /proc/<pid>/stat (proc(5): pid (comm) state ppid pgrp ...). */
export function processGroup(pgid: number): GroupProcess[] {
  const members: GroupProcess[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // it ended meanwhile
    }
    // The command name may hold spaces and parentheses: the fields after it start after its last ')'.
    const close = stat.lastIndexOf(')');
    const [state, , pgrp] = stat.slice(close + 2).split(' ');
    if (Number(pgrp) === pgid) members.push({ pid: Number(entry), state: state!, name: stat.slice(stat.indexOf('(') + 1, close) });
  }
  return members;
}

/**
 * The same Chromium as a process group the test can signal as a whole: SIGSTOP freezes the browser with its
 * network service (which answers WebSocket pings on a page's behalf), SIGKILL ends all of it at once.
 */
export async function launchSignallableChromium(): Promise<{
  browser: Browser;
  signal: (signal: NodeJS.Signals) => void;
  /** SIGSTOP to the whole group, resolved once every process of it is stopped (a signal is delivered asynchronously). */
  freeze: () => Promise<void>;
  /** The browser's processes now (diagnostics). */
  processes: () => GroupProcess[];
  /** SIGKILL to the whole group (if any of it is left), then Playwright's own end of the browser. */
  kill: () => Promise<void>;
}> {
  const server = await chromium.launchServer(LAUNCH);
  const pid = server.process().pid!;
  const browser = withDeadlines(await chromium.connect(server.wsEndpoint()));
  // Playwright starts the browser as the leader of its own process group (renderers and utilities inherit it).
  const signal = (signal: NodeJS.Signals) => process.kill(-pid, signal);
  const processes = () => processGroup(pid);
  const freeze = async () => {
    signal('SIGSTOP');
    await until(() => processes().every((p) => p.state === 'T' || p.state === 'Z'), 'every Chromium process stopped');
  };
  const kill = async () => {
    // The test may have killed the group already, and once its processes are reaped it no longer exists.
    try {
      signal('SIGKILL');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
    }
    await server.kill();
  };
  return { browser, signal, freeze, processes, kill };
}
