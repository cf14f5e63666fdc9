import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { launchChromium } from '../helpers/browser.js';
import { startDelayProxy, type DelayProxy } from '../helpers/delay-proxy.js';
import { pageSettles } from '../helpers/reference-checks.js';
import { kill, startProcess } from '../helpers/process.js';
import { recordDialogs, referencePageHtml, referenceState, routeReferencePage } from '../helpers/reference-page.js';
import { freePort } from '../helpers/service.js';
import { until } from '../helpers/until.js';

// Issue 10's acceptance, restarts: the service is a real process (dist/main.js), stopped with SIGTERM
// and started again on the same port and SQLite file, while a page written for the reference
// deployments stays open. The page's WebSocket goes through a proxy, so the test can hold its
// reconnect back and sign while it is away.
let browser: Browser;
beforeAll(async () => {
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
});

interface Deployment {
  baseUrl: string;
  env: NodeJS.ProcessEnv;
  proxy: DelayProxy;
  process: ChildProcess;
  dir: string;
}
let deployment: Deployment | undefined;

async function deploy(): Promise<Deployment> {
  const dir = mkdtempSync(join(tmpdir(), 'tabwire-restart-'));
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const env = { TABWIRE_PORT: String(port), TABWIRE_SQLITE_FILE: join(dir, 'tabwire.sqlite'), TABWIRE_LOG_LEVEL: 'warn' };
  const proxy = await startDelayProxy({ targetPort: port });
  deployment = { baseUrl, env, proxy, process: await startProcess(env, baseUrl), dir };
  return deployment;
}

afterEach(async () => {
  if (!deployment) return;
  await kill(deployment.process);
  await deployment.proxy.close();
  rmSync(deployment.dir, { recursive: true, force: true });
  deployment = undefined;
});

/** SIGTERM, wait for the exit, then a new process on the same port and SQLite file. */
async function restart(d: Deployment): Promise<{ exitCode: number | null }> {
  await kill(d.process, 'SIGTERM');
  const exitCode = d.process.exitCode;
  d.process = await startProcess(d.env, d.baseUrl);
  return { exitCode };
}

/**
 * The page asks for a code for its tab as pages do (same origin, so its session cookie goes along);
 * asked again while the tab is not registered yet. Returns the signUrl.
 */
async function codeFor(page: Page, purpose: string): Promise<string> {
  let last = '';
  const deadline = Date.now() + 20_000;
  for (;;) {
    const answer = await page.evaluate(async (p) => {
      const response = await fetch('/QuickLogin', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ serviceId: '', tab: window.name, mode: 'text', purpose: p }),
      });
      return { status: response.status, body: (await response.json()) as { signUrl?: string; code?: string } };
    }, purpose);
    if (answer.status === 200) return answer.body.signUrl!;
    last = `${answer.status} ${answer.body.code}`;
    // Not registered yet: 404, or 403 session_missing while the page's WebSocket handshake (which sets the
    // session cookie) is still on its way through the proxy, as happens on a busy machine.
    const notYet = answer.status === 404 || answer.body.code === 'session_missing';
    if (!notYet || Date.now() > deadline) throw new Error(`no code for the page's tab: ${last}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function approve(baseUrl: string, signUrl: string): Promise<void> {
  const response = await fetch(`${baseUrl}${new URL(signUrl).pathname}/Dev`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"decision":"approve"}' });
  expect(response.status, `approving ${signUrl}`).toBe(200);
}

const purposes = async (page: Page): Promise<string[]> => (await referenceState(page)).signatures.map((s: { Purpose: string }) => s.Purpose);

async function openPage(d: Deployment, path: string, query = ''): Promise<{ context: BrowserContext; page: Page; dialogs: string[] }> {
  const context = await browser.newContext();
  await context.grantPermissions(['local-network-access'], { origin: d.baseUrl }).catch(() => undefined);
  // At the service's origin; its WebSocket host (the NEURON meta) is the proxy. Cookies are per host,
  // not per port, so the session cookie is the same on both.
  await routeReferencePage(context, d.baseUrl, path, referencePageHtml({ neuron: `127.0.0.1:${d.proxy.port}` }));
  const page = await context.newPage();
  const dialogs = recordDialogs(page);
  await page.goto(`${d.baseUrl}${path}${query}`);
  return { context, page, dialogs };
}

describe('a restart of the service (SIGTERM, a new process on the same port and SQLite file)', () => {
  it('a page running the older event script reconnects, gets the result signed while it was away and the one signed after', async () => {
    const d = await deploy();
    const { context, page, dialogs } = await openPage(d, '/older.html');
    await approve(d.baseUrl, await codeFor(page, 'Before the restart'));
    await pageSettles(page, dialogs, (s) => s.signatures.length === 1, 'the result signed before the restart');
    const pending = await codeFor(page, 'While reconnecting');

    // From now on the page's reconnects wait at the proxy: nothing can register before the test says so.
    const release = d.proxy.holdWebSockets();
    const seen = d.proxy.webSocketsSeen;
    const { exitCode } = await restart(d);
    expect(exitCode, 'a clean exit on SIGTERM').toBe(0);
    // Signed on the new process while the page has no connection to it.
    await approve(d.baseUrl, pending);
    // The older script reconnects only on an `error` event (5 s later); it has no close handler.
    try {
      await until(() => d.proxy.webSocketsSeen > seen, 'the page to try to reconnect', 30_000);
    } catch {
      const state = await referenceState(page);
      throw new Error(`the page never tried to reconnect: close codes ${JSON.stringify(state.ref.closes)}, error events ${state.ref.errors}`);
    } finally {
      release();
    }
    const back = await pageSettles(page, dialogs, (s) => s.signatures.length >= 2, 'the result signed while the page was reconnecting');
    expect(back.ref.errors, 'the reconnect came through the error path').toBeGreaterThanOrEqual(1);
    expect(await purposes(page)).toEqual(['Before the restart', 'While reconnecting']);

    await approve(d.baseUrl, await codeFor(page, 'After the restart'));
    await pageSettles(page, dialogs, (s) => s.signatures.length >= 3, 'the result signed after the restart');
    expect(await purposes(page)).toEqual(['Before the restart', 'While reconnecting', 'After the restart']);
    expect(dialogs).toEqual([]);
    await context.close();
  }, 90_000);

  it('a page running the newer event script gets CheckServerInstance after Register, a new id after the restart, and reloads', async () => {
    const d = await deploy();
    const { context, page, dialogs } = await openPage(d, '/newer.html', '?csi=newer');
    let loads = 0;
    page.on('load', () => loads++);
    const instances = () => page.evaluate(() => JSON.parse(sessionStorage.getItem('serverInstances') ?? '[]') as unknown[]);
    const tabId = (await referenceState(page)).tabId;
    await until(async () => (await instances()).length >= 1, 'CheckServerInstance after Register');
    const [first] = await instances();
    expect(typeof first === 'string' && first.length > 0, `instance id ${JSON.stringify(first)}`).toBe(true);

    const loadsBefore = loads;
    await restart(d);
    // The newer script reconnects (on an error, or at its next 10 s ping), is told the new id and reloads.
    await until(async () => loads > loadsBefore && (await instances().catch(() => [])).some((id) => id !== first), 'a reload for a new server instance', 40_000);
    const seen = await instances();
    expect(seen[0]).toBe(first);
    expect(seen.find((id) => id !== first), 'the new id').toBeDefined();
    // Same tab after the reload (window.name), and it works on the new process.
    expect((await referenceState(page)).tabId).toBe(tabId);
    await approve(d.baseUrl, await codeFor(page, 'After the reload'));
    await pageSettles(page, dialogs, (s) => s.signatures.length >= 1, 'the result signed after the reload');
    expect(dialogs).toEqual([]);
    await context.close();
  }, 90_000);
});
