import { execFile, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kill, startProcess } from '../helpers/process.js';
import { CallbackReceiver, type ReceivedCallback } from '../helpers/receiver.js';
import { freePort } from '../helpers/service.js';
import { TestTab } from '../helpers/tab.js';
import { selfSignedCertificate } from '../helpers/tls.js';
import { blockNamed, blocksRunBy } from './doc-blocks.js';
import { readerEnv } from './doc-shell.js';

/**
 * docs/backend.md and docs/protocol.md, backend mode: the registration request as the document writes it,
 * sent to the built service, and the callback verification snippets run as a backend runs them, on a real
 * callback the service signed and POSTed to an HTTPS receiver. Each snippet runs in its own Node process as
 * a module inside the clone, so `tabwire/backend` resolves to the package's own export.
 */

const SLOW = { timeout: 120_000 };
const root = process.cwd();
const blocks = blocksRunBy('test/docs/doc-snippets.test.ts');
const tls = selfSignedCertificate();
const secret = `whsec_${Buffer.from('a backend secret of 32 bytes!!!!').toString('base64')}`;
let base: string;
let service: ChildProcess;
let receiver: CallbackReceiver;
let dir: string;
let scratch: string;

beforeAll(async () => {
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  dir = mkdtempSync(join(tmpdir(), 'tabwire-doc-snippets-'));
  // Git ignores tmp/; a module there resolves the package by its own name.
  mkdirSync(join(root, 'tmp'), { recursive: true });
  scratch = mkdtempSync(join(root, 'tmp', 'doc-snippets-'));
  receiver = await CallbackReceiver.start(tls);
  service = await startProcess(
    {
      TABWIRE_PORT: String(port),
      TABWIRE_SQLITE_FILE: join(dir, 'tabwire.sqlite'),
      TABWIRE_LOG_LEVEL: 'warn',
      TABWIRE_CALLBACK_CA_FILE: tls.certFile,
      TABWIRE_CALLBACK_ALLOWED_HOSTS: '127.0.0.1',
    },
    base,
  );
});

afterAll(async () => {
  if (service) await kill(service, 'SIGTERM');
  await receiver?.close();
  rmSync(dir, { recursive: true, force: true });
  rmSync(scratch, { recursive: true, force: true });
  rmSync(dirname(tls.certFile), { recursive: true, force: true });
});

/** Sends an HTTP request written as in the documents (request line, headers, blank line, body). */
async function send(written: string): Promise<{ status: number; body: unknown }> {
  const [head, body] = written.split(/\n\n/) as [string, string];
  const [requestLine, ...headerLines] = head.split('\n');
  const [method, path] = requestLine!.split(' ') as [string, string];
  const headers = Object.fromEntries(headerLines.map((line) => line.split(/:\s*/, 2) as [string, string]));
  const answer = await fetch(base + path, { method, headers, body: body.trim() });
  return { status: answer.status, body: await answer.json() };
}

/** A login in backend mode approved with the development identity; returns the callback the receiver got. */
async function backendCallback(sessionId: string): Promise<ReceivedCallback> {
  const json = { 'content-type': 'application/json' };
  const registration = await fetch(`${base}/QuickLogin`, { method: 'POST', headers: json, body: JSON.stringify({ service: receiver.url, sessionId, webhookSecret: secret }) });
  expect(registration.status).toBe(200);
  const { serviceId } = (await registration.json()) as { serviceId: string };
  const tab = await TestTab.open(`${base.replace('http', 'ws')}/ClientEventsWS`);
  try {
    await tab.next('CheckServerInstance');
    const qr = await fetch(`${base}/QuickLogin`, {
      method: 'POST',
      headers: { ...json, cookie: tab.cookie },
      body: JSON.stringify({ mode: 'text', purpose: 'Log in to the shop', serviceId, tab: tab.tabId }),
    });
    expect(qr.status).toBe(200);
    const { signUrl } = (await qr.json()) as { signUrl: string };
    const before = receiver.received.length;
    const approved = await fetch(`${signUrl}/Dev`, { method: 'POST', headers: json, body: JSON.stringify({ decision: 'approve' }) });
    expect(await approved.json()).toEqual({ state: 'approved' });
    await receiver.waitFor(before + 1, 30_000);
    await tab.next('SignatureReceivedBE');
    return receiver.received[before]!;
  } finally {
    tab.close();
  }
}

/** Runs a snippet with `request.headers` and `rawBody` of a callback; resolves with its exit and output. */
function runSnippet(name: string, snippet: string, callback: { headers: unknown; body: string }): Promise<{ code: number; stdout: string; stderr: string }> {
  const file = join(scratch, `${name}.mjs`);
  const given = 'const request = { headers: JSON.parse(process.env.CALLBACK_HEADERS) };\nconst rawBody = process.env.CALLBACK_BODY;\n';
  writeFileSync(file, `${given}${snippet}\nconsole.log(JSON.stringify(result));\n`);
  const env = readerEnv({ CALLBACK_HEADERS: JSON.stringify(callback.headers), CALLBACK_BODY: callback.body });
  return new Promise((resolve) => {
    execFile(process.execPath, [file], { cwd: root, env }, (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }));
  });
}

describe('backend mode in the documents, run as written', () => {
  it('runs every block marked for this file', () => {
    expect([...blocks.keys()].sort()).toEqual(['register', 'verify-callback', 'verify-callback-options', 'verify-standardwebhooks']);
  });

  it('docs/backend.md: the registration request is answered 200 {"serviceId": …}; the same request with it renews', SLOW, async () => {
    const written = blockNamed(blocks, 'register').text;
    expect(written).toContain('<your pending login attempt>');
    // The site's callback URL: here the test's HTTPS receiver, a host the service may call and can resolve.
    expect(written).toContain('"https://shop.example/tabwire-callback"');
    const request = written.replace('<your pending login attempt>', 'cart-4711').replace('https://shop.example/tabwire-callback', receiver.url);
    const registered = await send(request);
    expect(registered.status, JSON.stringify(registered.body)).toBe(200);
    expect(Object.keys(registered.body as object)).toEqual(['serviceId']);
    const { serviceId } = registered.body as { serviceId: string };
    const renewed = await send(request.replace('"sessionId": "cart-4711"', `"sessionId": "cart-4711", "serviceId": "${serviceId}"`));
    expect(renewed).toEqual({ status: 200, body: { serviceId } });
  });

  it('the verification snippets return the callback body, and refuse it once a byte of it changed', SLOW, async () => {
    const callback = await backendCallback('cart-4712');
    const { key } = (await (await fetch(`${base}/.well-known/tabwire/webhook-key`)).json()) as { key: string };
    expect(key).toMatch(/^whpk_/);
    const tampered = { headers: callback.headers, body: callback.body.replace('cart-4712', 'cart-4713') };
    expect(tampered.body).not.toBe(callback.body);

    for (const [name, refusal] of [
      ['verify-callback', /CallbackVerificationError/],
      ['verify-callback-options', /CallbackVerificationError/],
      ['verify-standardwebhooks', /WebhookVerificationError/],
    ] as const) {
      const snippet = blockNamed(blocks, name).text;
      expect(snippet, name).toMatch(/'whpk_…'|'whsec_…'/);
      const filled = snippet.replace("'whpk_…'", JSON.stringify(key)).replace("'whsec_…'", JSON.stringify(secret));
      const good = await runSnippet(name, filled, callback);
      expect(good.code, `${name}: ${good.stderr}`).toBe(0);
      const result = JSON.parse(good.stdout) as { SessionId: string; ServiceId: string; ServerSignature: string };
      expect(result.SessionId, name).toBe('cart-4712');
      expect(result.ServerSignature, name).toMatch(/^[A-Za-z0-9+/]{86}==$/);
      const bad = await runSnippet(name, filled, tampered);
      expect(bad.code, name).not.toBe(0);
      expect(bad.stderr, name).toMatch(refusal);
    }
  });
});
