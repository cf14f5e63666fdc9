import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { purposeOf } from '../helpers/cluster-flows.js';
import { kill, startProcess } from '../helpers/process.js';
import { freePort } from '../helpers/service.js';
import { TestTab } from '../helpers/tab.js';
import { until } from '../helpers/until.js';

/**
 * The built service on one node (SQLite, its streams in memory) restarted while results wait for their pages
 * (docs/events.md "Restarts"). Its streams die with the process; the results of recent logins are sent again to
 * each tab that comes back, except those its pages were written before a clean stop. So across a clean restart
 * (SIGTERM) a page gets each result once: the one signed while it was away although another result made its
 * tab's stream first after the restart, and not again the one it had. After a crash (SIGKILL) nothing says what
 * was written: no result is lost, and one the page had may come again.
 */
const dir = mkdtempSync(join(tmpdir(), 'tabwire-restart-results-'));
/** The running process of the current test (a restart replaces it); every one started, to stop at the end. */
let child: ChildProcess | undefined;
const started: ChildProcess[] = [];

afterAll(async () => {
  for (const c of started) await kill(c);
  rmSync(dir, { recursive: true, force: true });
});

const postJson = (url: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

const connected = async (baseUrl: string): Promise<number> => Number(/^tabwire_tabs_connected (\d+)$/m.exec(await (await fetch(`${baseUrl}/metrics`)).text())?.[1] ?? NaN);

/** A login for the tab (its session's cookie), approved on the development page: its result goes to the tab. */
async function login(baseUrl: string, tab: TestTab, purpose: string): Promise<void> {
  const qr = await postJson(`${baseUrl}/QuickLogin`, { mode: 'text', purpose, serviceId: '', tab: tab.tabId }, { cookie: tab.cookie });
  expect(qr.status, await qr.clone().text()).toBe(200);
  const { signUrl } = (await qr.json()) as { signUrl: string };
  const approved = await postJson(`${signUrl}/Dev`, { decision: 'approve' });
  expect(approved.status).toBe(200);
}

const results = (tab: TestTab): string[] => tab.events.filter((e) => e.type === 'SignatureReceived').map((e) => purposeOf(e) ?? JSON.stringify(e.data));

/** Waits until the tab has a result of each purpose. */
async function resultsArrive(tab: TestTab, purposes: string[]): Promise<void> {
  try {
    await until(() => purposes.every((p) => results(tab).includes(p)), `results ${purposes.join(', ')}`);
  } catch (err) {
    throw new Error(`${(err as Error).message}; the page got ${results(tab).join(', ') || 'none'}`);
  }
}

/**
 * Results whose published mark is not written yet (the node collects marks for 500 ms): after a crash the result
 * outbox would publish those again, which is another way for them to reach their page than the one tested here.
 */
function owedResults(sqliteFile: string): number {
  const db = new SQLite(sqliteFile, { readonly: true });
  try {
    return (db.prepare('SELECT count(*) AS n FROM codes WHERE signed_at IS NOT NULL AND announced_at IS NULL').get() as { n: number }).n;
  } finally {
    db.close();
  }
}

async function deploy(): Promise<{ baseUrl: string; wsUrl: string; sqliteFile: string; start: () => Promise<void> }> {
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const sqliteFile = join(dir, `db-${port}.sqlite`);
  const env = { TABWIRE_PORT: String(port), TABWIRE_SQLITE_FILE: sqliteFile, TABWIRE_LOG_LEVEL: 'warn' };
  const start = async () => {
    child = await startProcess(env, baseUrl);
    started.push(child);
  };
  await start();
  return { baseUrl, wsUrl: `ws://127.0.0.1:${port}/ClientEventsWS`, sqliteFile, start };
}

/** A page that got a result and then went away (the node has noticed). */
async function pageThatLeft(d: { baseUrl: string; wsUrl: string }, purpose: string): Promise<TestTab> {
  const tab = await TestTab.open(d.wsUrl);
  await tab.next('CheckServerInstance');
  await login(d.baseUrl, tab, purpose);
  await resultsArrive(tab, [purpose]);
  const before = await connected(d.baseUrl);
  tab.close();
  await until(async () => (await connected(d.baseUrl)) < before, 'the page gone from the node');
  return tab;
}

describe('results across a restart of one node', () => {
  it('a clean restart (SIGTERM): the result signed while the page was away arrives though another made the stream first, and no page gets again the result it had', async () => {
    const d = await deploy();
    const away = await pageThatLeft(d, 'A had');
    await login(d.baseUrl, away, 'A while away');
    const returning = await pageThatLeft(d, 'B had');

    await kill(child!, 'SIGTERM');
    expect(child!.exitCode).toBe(0);
    await d.start();
    // Signed before A comes back: its publish makes A's stream on the new process.
    await login(d.baseUrl, away, 'A after the restart');

    const a = await TestTab.open(d.wsUrl, { cookie: away.cookie, tabId: away.tabId });
    const b = await TestTab.open(d.wsUrl, { cookie: returning.cookie, tabId: returning.tabId });
    await resultsArrive(a, ['A while away', 'A after the restart']);
    // A result signed now comes after anything the returns sent: then every result is in.
    await login(d.baseUrl, a, 'A marker');
    await login(d.baseUrl, b, 'B marker');
    await resultsArrive(a, ['A marker']);
    await resultsArrive(b, ['B marker']);
    expect(results(a).sort()).toEqual(['A after the restart', 'A marker', 'A while away']);
    expect(results(b)).toEqual(['B marker']);
    a.close();
    b.close();
  }, 120_000);

  it('a crash (SIGKILL): the result signed while the page was away still arrives, once', async () => {
    const d = await deploy();
    const away = await pageThatLeft(d, 'C had');
    await login(d.baseUrl, away, 'C while away');
    // The instant: every result in its tab's stream and marked published, the page away.
    await until(() => owedResults(d.sqliteFile) === 0, 'the published marks written');

    await kill(child!);
    await d.start();
    await login(d.baseUrl, away, 'C after the crash');

    const c = await TestTab.open(d.wsUrl, { cookie: away.cookie, tabId: away.tabId });
    await resultsArrive(c, ['C while away', 'C after the crash']);
    await login(d.baseUrl, c, 'C marker');
    await resultsArrive(c, ['C marker']);
    const got = results(c);
    expect(got.filter((p) => p !== 'C had').sort()).toEqual(['C after the crash', 'C marker', 'C while away']);
    // Nothing recorded what the page had been written before the crash: that result may come once more.
    expect(got.filter((p) => p === 'C had').length).toBeLessThanOrEqual(1);
    c.close();
  }, 120_000);
});
