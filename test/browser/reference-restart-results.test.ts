import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { launchChromium } from '../helpers/browser.js';
import { startDelayProxy, type DelayProxy } from '../helpers/delay-proxy.js';
import { approveAt } from '../helpers/reference-checks.js';
import { kill, startProcess } from '../helpers/process.js';
import { recordDialogs, referencePageHtml, referenceState, routeReferencePage, type ReferenceState } from '../helpers/reference-page.js';
import { freePort } from '../helpers/service.js';
import { until } from '../helpers/until.js';

// docs/events.md "Restarts": a result signed while the service restarts reaches a page written for the
// reference deployments and stays shown, although the page reloads on the way (the newer event script on a
// new CheckServerInstance id; the older long-poll loop on its first 200 after an error answer), for both
// event script generations (test/browser/fixtures), over WebSocket and over long-poll. The service is the
// built program, stopped with SIGTERM and started again on the same port and SQLite file, behind a proxy
// (the page's origin) that answers 502 while the service is down, as a reverse proxy does.
let browser: Browser;
beforeAll(async () => {
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
});

interface Deployment {
  baseUrl: string;
  origin: string;
  env: NodeJS.ProcessEnv;
  proxy: DelayProxy;
  process: ChildProcess;
  dir: string;
}
let deployment: Deployment | undefined;

async function deploy(): Promise<Deployment> {
  const dir = mkdtempSync(join(tmpdir(), 'tabwire-restart-results-'));
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const proxy = await startDelayProxy({ targetPort: port });
  proxy.badGatewayWhenDown = true;
  const origin = `http://127.0.0.1:${proxy.port}`;
  const env = { TABWIRE_PORT: String(port), TABWIRE_SQLITE_FILE: join(dir, 'tabwire.sqlite'), TABWIRE_LOG_LEVEL: 'warn', TABWIRE_PUBLIC_BASE_URL: origin };
  deployment = { baseUrl, origin, env, proxy, process: await startProcess(env, baseUrl), dir };
  return deployment;
}

afterEach(async () => {
  if (!deployment) return;
  await kill(deployment.process);
  await deployment.proxy.close();
  rmSync(deployment.dir, { recursive: true, force: true });
  deployment = undefined;
});

/** The page asks for a code for its tab as pages hosted with the service do (same origin, its cookie goes along). */
async function codeFor(page: Page, purpose: string): Promise<string> {
  const answer = await page.evaluate(async (p) => {
    const response = await fetch('/QuickLogin', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ serviceId: '', tab: window.name, mode: 'text', purpose: p }),
    });
    return { status: response.status, body: (await response.json()) as { signUrl?: string; code?: string } };
  }, purpose);
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  return answer.body.signUrl!;
}

/** The page's state, or undefined while it is between two documents (a reload). */
const stateOf = (page: Page): Promise<ReferenceState | undefined> => referenceState(page).catch(() => undefined);
const purposes = (state: ReferenceState | undefined): string[] => (state?.signatures ?? []).map((s: { Purpose: string }) => s.Purpose);

type Generation = 'older' | 'newer';
type Transport = 'websocket' | 'long-poll';

async function signDuringRestart(generation: Generation, transport: Transport): Promise<void> {
  const d = await deploy();
  const context = await browser.newContext();
  await context.grantPermissions(['local-network-access'], { origin: d.origin }).catch(() => undefined);
  await routeReferencePage(context, d.origin, '/login.html', referencePageHtml());
  const page = await context.newPage();
  const dialogs = recordDialogs(page);
  let loads = 0;
  page.on('load', () => loads++);
  const query = new URLSearchParams({ ...(generation === 'newer' ? { csi: 'newer' } : {}), ...(transport === 'long-poll' ? { nows: '1' } : {}) });
  await page.goto(`${d.origin}/login.html?${query}`);
  // Registered (a WebSocket Register, or a first poll answered): the page has its session cookie.
  await until(async () => {
    const s = await stateOf(page);
    return transport === 'websocket' ? (s?.ref.registers ?? 0) >= 1 && s!.ref.events.includes('CheckServerInstance') : (s?.ref.pollStatuses.length ?? 0) >= 1;
  }, 'the page to register');
  const pending = await codeFor(page, 'During the restart');
  const tabId = (await referenceState(page)).tabId;

  if (transport === 'websocket') {
    // The page's reconnect waits at the proxy until the result is signed on the new process.
    const release = d.proxy.holdWebSockets();
    const seen = d.proxy.webSocketsSeen;
    await kill(d.process, 'SIGTERM');
    d.process = await startProcess(d.env, d.baseUrl);
    await approveAt(d.baseUrl, pending);
    await until(() => d.proxy.webSocketsSeen > seen, 'the page to reconnect', 40_000);
    release();
  } else {
    // The held poll is answered at shutdown; the page's next poll meets the proxy's 502 (an alert, and the
    // older loop will reload at its next 200). That next poll waits at the proxy until the result is signed.
    await kill(d.process, 'SIGTERM');
    await until(() => dialogs.length > 0, 'the 502 answer while the service is down');
    const release = d.proxy.holdAll();
    d.process = await startProcess(d.env, d.baseUrl);
    await approveAt(d.baseUrl, pending);
    release();
  }

  const loadsBefore = loads;
  // Pages that reload on the way may show the result on the document that is about to reload (a slow machine
  // renders it before the reload starts): what counts is the document after the reload.
  const reloading = generation === 'newer' || transport === 'long-poll';
  await until(
    async () => (!reloading || loads > loadsBefore) && purposes(await stateOf(page)).includes('During the restart'),
    'the result signed during the restart',
    40_000,
  );
  // It stays shown: a result signed afterwards reaches the same document, which still shows the first.
  const loadsWithResult = loads;
  await approveAt(d.baseUrl, await codeFor(page, 'After the restart'));
  await until(async () => purposes(await stateOf(page)).includes('After the restart'), 'the result signed after the restart', 40_000);
  const final = await referenceState(page);
  expect(loads, 'no reload after the result was shown').toBe(loadsWithResult);
  expect(purposes(final), 'each result once on the page that stays').toEqual(['During the restart', 'After the restart']);
  expect(final.tabId, 'the same tab throughout (window.name)').toBe(tabId);
  // Which pages reloaded on the way (the point of the test is that those still get the result).
  const reloads = loadsWithResult - loadsBefore;
  if (generation === 'newer' || transport === 'long-poll') expect(reloads, 'the page reloaded on the way').toBeGreaterThanOrEqual(1);
  else expect(reloads, 'the older WebSocket script does not reload').toBe(0);
  // The only alert is the proxy's 502 of the long-poll while the service was down.
  expect(dialogs.every((text) => text.includes('Bad Gateway')), dialogs.join(' | ')).toBe(true);
  await context.close();
}

describe('a result signed while the service restarts is shown after the page reloads (SIGTERM, a new process)', () => {
  for (const generation of ['older', 'newer'] as const) {
    for (const transport of ['websocket', 'long-poll'] as const) {
      it(`${generation} event script, ${transport}`, () => signDuringRestart(generation, transport), 120_000);
    }
  }
});
