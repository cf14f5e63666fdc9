import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { kill, startProcess } from '../helpers/process.js';
import { CallbackReceiver } from '../helpers/receiver.js';
import { freePort } from '../helpers/service.js';
import { TestTab } from '../helpers/tab.js';
import { selfSignedCertificate } from '../helpers/tls.js';
import { until } from '../helpers/until.js';

// The built service as an operator runs it, killed with SIGKILL between accepting a signature and
// delivering its callback.
const dir = mkdtempSync(join(tmpdir(), 'tabwire-restart-'));
let child: ChildProcess | undefined;
let receiver: CallbackReceiver | undefined;

afterAll(async () => {
  if (child) await kill(child);
  await receiver?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The process holds one live tab connection (this test's only tab): its Register has been processed. */
const tabConnected = async (baseUrl: string) => /^tabwire_tabs_connected 1$/m.test(await (await fetch(`${baseUrl}/metrics`)).text());

const postJson = (url: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

describe('durable callbacks', () => {
  it('a callback pending when tabwire is SIGKILLed is delivered after the restart, and the re-registered tab hears of it', async () => {
    const tls = selfSignedCertificate();
    receiver = await CallbackReceiver.start(tls);
    receiver.answers = [{ status: 503 }];
    const port = await freePort();
    const baseUrl = `http://127.0.0.1:${port}`;
    const env = {
      TABWIRE_PORT: String(port),
      TABWIRE_SQLITE_FILE: join(dir, 'db.sqlite'),
      TABWIRE_CALLBACK_CA_FILE: tls.certFile,
      TABWIRE_CALLBACK_ALLOWED_HOSTS: '127.0.0.1',
      TABWIRE_CALLBACK_RETRY_BASE_MS: '100',
      TABWIRE_CALLBACK_RETRY_CAP_MS: '300',
      TABWIRE_CALLBACK_POLL_MS: '50',
      // A callback claimed by the killed process is free again after timeout + 1 s.
      TABWIRE_CALLBACK_TIMEOUT_MS: '1000',
      TABWIRE_LOG_LEVEL: 'warn',
    };
    child = await startProcess(env, baseUrl);
    const wsUrl = `ws://127.0.0.1:${port}/ClientEventsWS`;
    let tab = await TestTab.open(wsUrl);
    await until(() => tabConnected(baseUrl), 'the tab to register');
    const { serviceId } = (await (await postJson(`${baseUrl}/QuickLogin`, { service: receiver.url, sessionId: 'restart-session' })).json()) as { serviceId: string };
    const qr = (await (await postJson(`${baseUrl}/QuickLogin`, { mode: 'text', purpose: 'Survive', serviceId, tab: tab.tabId }, { cookie: tab.cookie })).json()) as { signUrl: string };
    const approved = await postJson(`${qr.signUrl}/Dev`, { decision: 'approve' });
    expect(approved.status).toBe(200);
    await receiver.waitFor(1);
    await kill(child);
    tab.close();
    const attemptsBefore = receiver.received.length;

    child = await startProcess(env, baseUrl);
    tab = await TestTab.open(wsUrl, { cookie: tab.cookie, tabId: tab.tabId });
    await until(() => tabConnected(baseUrl), 'the tab to register again');
    receiver.answers = [...receiver.received.map(() => ({ status: 503 })), { status: 200 }];
    const event = await tab.next('SignatureReceivedBE', 10_000);
    expect(event.data).toBe('');
    expect(receiver.received.length).toBeGreaterThan(attemptsBefore);
    const ids = new Set(receiver.received.map((r) => r.headers['webhook-id']));
    expect(ids.size).toBe(1);
    expect(JSON.parse(receiver.received.at(-1)!.body)).toMatchObject({ SessionId: 'restart-session', ServiceId: serviceId });
    tab.close();
  });
});
