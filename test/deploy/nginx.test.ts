import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { lookup as dnsLookup } from 'node:dns';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request as httpsRequest, Agent as HttpsAgent } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, fetch as undiciFetch, getGlobalDispatcher, setGlobalDispatcher, type Dispatcher } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { PING_INTERVAL_MS } from '../../src/browser/websocket-transport.js';
import { fetchSignInfo, postDecision } from '../../src/cli/signer.js';
import { ConfigSchema } from '../../src/config/schema.js';
import { privateKeyFromPem } from '../../src/identity/keys.js';
import type { QuickLoginResult } from '../../src/protocol/events.js';
import type { EventFrame } from '../../src/protocol/frames.js';
import { launchChromium } from '../helpers/browser.js';
import { registered } from '../helpers/http.js';
import { connected } from '../helpers/hub.js';
import { startNginx, type NginxServer } from '../helpers/nginx.js';
import { freePort, makeIdentity, startService, type TestService } from '../helpers/service.js';
import { until } from '../helpers/until.js';

/**
 * docs/deployment.md "One node": the nginx file in deploy/ run for real in front of a real tabwire, TLS
 * ending at nginx, every request of a page and a signing app going through it. The file is used as it is;
 * only its listen ports, the node's address and the certificate paths are replaced.
 */

const ROOT = join(import.meta.dirname, '..', '..');
const SITE_FILE = join(ROOT, 'deploy', 'nginx', 'tabwire.conf');
const UNIT_FILE = join(ROOT, 'deploy', 'tabwire.service');
const DOC_FILE = join(ROOT, 'docs', 'deployment.md');
/** The name in the file; the test's certificate is for it and every name resolves to loopback here. */
const NAME = 'auth.example.org';
/** Forged X-Forwarded-For values and the per-address limit the test runs against. */
const QR_PER_ADDRESS = 5;

let service: TestService;
let nginx: NginxServer;
let certDir: string;
let ca: Buffer;
let front: string;
let httpPort: number;
let agent: Agent;
let httpsAgent: HttpsAgent;
let previousDispatcher: Dispatcher;
let ada: Awaited<ReturnType<typeof makeIdentity>>;

/** Every host name is this machine (the way DNS would send auth.example.org to the proxy). */
const toLoopback = ((_host: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
  if (options?.all) callback(null, [{ address: '127.0.0.1', family: 4 }]);
  else callback(null, '127.0.0.1', 4);
}) as unknown as typeof dnsLookup;

/** deploy/nginx/tabwire.conf with its ports, node address and certificate paths replaced, nothing else. */
function siteConfig(o: { httpPort: number; httpsPort: number; nodePort: number; certFile: string; keyFile: string }): string {
  let text = readFileSync(SITE_FILE, 'utf8');
  const replacements: Array<[string, string]> = [
    ['listen 80;', `listen 127.0.0.1:${o.httpPort};`],
    ['listen 443 ssl;', `listen 127.0.0.1:${o.httpsPort} ssl;`],
    ['server 127.0.0.1:8080;', `server 127.0.0.1:${o.nodePort};`],
    [`/etc/letsencrypt/live/${NAME}/fullchain.pem`, o.certFile],
    [`/etc/letsencrypt/live/${NAME}/privkey.pem`, o.keyFile],
  ];
  for (const [from, to] of replacements) {
    const parts = text.split(from);
    if (parts.length !== 2) throw new Error(`${SITE_FILE}: expected "${from}" exactly once (found ${parts.length - 1}); update this test with the file`);
    text = parts.join(to);
  }
  return text;
}

beforeAll(async () => {
  certDir = mkdtempSync(join(tmpdir(), 'tabwire-nginx-tls-'));
  const certFile = join(certDir, 'cert.pem');
  const keyFile = join(certDir, 'key.pem');
  execFileSync('openssl', [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
    '-keyout', keyFile, '-out', certFile, '-days', '1', '-subj', `/CN=${NAME}`, '-addext', `subjectAltName=DNS:${NAME}`,
  ], { stdio: 'ignore' });
  ca = readFileSync(certFile);

  httpPort = await freePort();
  const httpsPort = await freePort();
  front = `https://${NAME}:${httpsPort}`;
  // As docs/deployment.md says: the public URL is the proxy's, and X-Forwarded-For is trusted.
  service = await startService({ publicBaseUrl: front, trustProxy: true, qrRequestsPerAddressPerMinute: QR_PER_ADDRESS });
  ada = await makeIdentity(service, { FIRST: 'Ada', LAST: 'Lovelace', COUNTRY: 'GB' });
  const nodePort = Number(new URL(service.baseUrl).port);
  nginx = await startNginx(siteConfig({ httpPort, httpsPort, nodePort, certFile, keyFile }), [httpPort, httpsPort]);

  agent = new Agent({ connect: { ca, lookup: toLoopback } });
  httpsAgent = new HttpsAgent({ ca, lookup: toLoopback });
  // The signing app's requests (src/cli/signer.ts uses the global fetch) go through the proxy as well.
  previousDispatcher = getGlobalDispatcher();
  setGlobalDispatcher(agent);
});

afterAll(async () => {
  if (previousDispatcher) setGlobalDispatcher(previousDispatcher);
  await nginx?.stop();
  await service?.close();
  await agent?.close();
  httpsAgent?.destroy();
  if (certDir) rmSync(certDir, { recursive: true, force: true });
});

/** A request as a page on the service's own origin sends it, through the proxy. */
async function send(path: string, init: { method?: string; body?: string; headers?: Record<string, string>; dispatcher?: Dispatcher } = {}) {
  const response = await undiciFetch(front + path, {
    method: init.method ?? 'GET',
    headers: { origin: front, ...init.headers },
    ...(init.body === undefined ? {} : { body: init.body }),
    dispatcher: init.dispatcher ?? agent,
  });
  const type = response.headers.get('content-type') ?? '';
  const body: any = type.includes('json') ? await response.json() : Buffer.from(await response.arrayBuffer());
  return { status: response.status, headers: response.headers, body };
}

const qrRequest = (tab: string, cookie: string, mode: 'image' | 'text', extra: { headers?: Record<string, string>; dispatcher?: Dispatcher } = {}) =>
  send('/QuickLogin', {
    method: 'POST',
    headers: { 'content-type': 'application/json', cookie, ...extra.headers },
    body: JSON.stringify({ mode, purpose: 'Log in behind nginx', serviceId: '', tab }),
    ...(extra.dispatcher ? { dispatcher: extra.dispatcher } : {}),
  });

/** The first long-poll of a new tab: registers it and answers at once with the session cookie. */
async function firstPoll(tabId: string, headers: Record<string, string> = {}) {
  const answer = await send('/ClientEvents', { method: 'POST', headers: { 'content-type': 'text/plain', 'x-tabid': tabId, ...headers }, body: `${front}/page` });
  expect(answer.status).toBe(200);
  const setCookie = answer.headers.get('set-cookie') ?? '';
  return { setCookie, cookie: setCookie.split(';')[0]! };
}

/** What a browser is told about the session cookie: it travels over https only, never to scripts. */
function expectSecureSessionCookie(setCookie: string): void {
  const [pair, ...attributes] = setCookie.split(';').map((s) => s.trim());
  expect(pair).toMatch(/^tabwire_sid=[A-Za-z0-9_-]{43}$/);
  expect(attributes.map((a) => a.toLowerCase())).toEqual(expect.arrayContaining(['secure', 'httponly', 'samesite=lax', 'path=/']));
}

/** The signing app: reads the code's request through its https signUrl and approves it (via the proxy). */
async function approve(signUrl: string): Promise<void> {
  const info = await fetchSignInfo(signUrl);
  const answer = await postDecision(signUrl, info, ada.identity.id, privateKeyFromPem(ada.privateKeyPem), 'approve');
  expect(answer.state).toBe('approved');
}

const signUrlPattern = () => new RegExp(`^${front.replace(/\./g, '\\.')}/QuickLogin/Sign/[A-Za-z0-9_-]{22}$`);

describe('tabwire behind nginx (deploy/nginx/tabwire.conf)', () => {
  it('docs/deployment.md shows the files of deploy/ as they are, and the proxy timeouts stay above the service\'s', () => {
    const doc = readFileSync(DOC_FILE, 'utf8');
    const site = readFileSync(SITE_FILE, 'utf8');
    expect(doc).toContain('```nginx\n' + site + '```');
    expect(doc).toContain('```ini\n' + readFileSync(UNIT_FILE, 'utf8') + '```');

    const block = (path: string) => new RegExp(`location = ${path} \\{([^}]*)\\}`).exec(site)?.[1] ?? '';
    const seconds = (text: string, directive: string) => Number(new RegExp(`${directive} (\\d+)s;`).exec(text)?.[1]);
    const longPoll = block('/ClientEvents');
    // Any hold an operator may configure ends before nginx gives up on the node's answer.
    expect(seconds(longPoll, 'proxy_read_timeout')).toBeGreaterThan(Number(ConfigSchema.properties.longPollHoldSeconds.maximum));
    expect(longPoll).toContain('proxy_buffering off;');
    const socket = block('/ClientEventsWS');
    for (const directive of ['proxy_read_timeout', 'proxy_send_timeout']) {
      expect(seconds(socket, directive)).toBeGreaterThan(PING_INTERVAL_MS / 1000);
      expect(seconds(socket, directive)).toBeGreaterThan(ConfigSchema.properties.pingTimeoutSeconds.default);
    }
  });

  it('a WebSocket tab: the handshake passes with subprotocol ls and a Secure cookie, the QR names https URLs, the signature reaches the tab', async () => {
    const tabId = randomUUID();
    const ws = new WebSocket(`wss://${NAME}:${new URL(front).port}/ClientEventsWS`, 'ls', { agent: httpsAgent, headers: { origin: front } });
    let setCookie = '';
    ws.on('upgrade', (response) => {
      setCookie = response.headers['set-cookie']?.[0] ?? '';
    });
    const events: EventFrame[] = [];
    ws.on('message', (data) => events.push(JSON.parse(data.toString()) as EventFrame));
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    expect(ws.protocol).toBe('ls');
    expectSecureSessionCookie(setCookie);
    ws.send(JSON.stringify({ cmd: 'Register', tabId, location: `${front}/page` }));
    await registered(service, tabId);

    const qr = await qrRequest(tabId, setCookie.split(';')[0]!, 'image');
    expect(qr.status).toBe(200);
    expect(qr.body.signUrl).toMatch(signUrlPattern());
    expect(qr.body.src).toBe(`${front}/QuickLogin/Qr/${qr.body.signUrl.split('/').at(-1)}.png`);
    const image = await send(new URL(qr.body.src).pathname);
    expect([image.status, image.headers.get('content-type')]).toEqual([200, 'image/png']);

    await approve(qr.body.signUrl);
    await until(() => events.some((e) => e.type === 'SignatureReceived'), 'the signature on the WebSocket');
    const result = events.find((e) => e.type === 'SignatureReceived')!.data as QuickLoginResult;
    expect([result.Id, result.State, result.Purpose]).toEqual([ada.identity.id, 'Approved', 'Log in behind nginx']);
    ws.close(1000);
  });

  it('a long-poll tab: a poll held through the proxy is answered by the signature\'s event', async () => {
    const tabId = randomUUID();
    const { setCookie, cookie } = await firstPoll(tabId);
    expectSecureSessionCookie(setCookie);
    const qr = await qrRequest(tabId, cookie, 'text');
    expect(qr.body.signUrl).toMatch(signUrlPattern());

    const held = send('/ClientEvents', { method: 'POST', headers: { 'content-type': 'text/plain', 'x-tabid': tabId, cookie }, body: `${front}/page` });
    await until(() => connected(service, tabId), 'the poll to be held at the node');
    await approve(qr.body.signUrl);
    // The hold time is 20 s: an answer with the event (not a NOP) was sent when the event came.
    const answer = await held;
    expect(answer.status).toBe(200);
    const frames = answer.body as EventFrame[];
    expect(frames.map((e) => e.type)).toContain('SignatureReceived');
    expect((frames.find((e) => e.type === 'SignatureReceived')!.data as QuickLoginResult).Id).toBe(ada.identity.id);
  });

  it('signUrl and the cookie\'s Secure flag come from publicBaseUrl: a forged Host, X-Forwarded-Host or X-Forwarded-Proto changes neither', async () => {
    const forged = { host: 'evil.example', 'x-forwarded-host': 'evil.example', 'x-forwarded-proto': 'http' };
    const tabId = randomUUID();
    // node:https sends the Host header as given (fetch would not let a client choose it).
    const first = await new Promise<{ status: number; setCookie: string }>((resolve, reject) => {
      const request = httpsRequest(`${front}/ClientEvents`, { method: 'POST', agent: httpsAgent, servername: NAME, headers: { ...forged, origin: front, 'content-type': 'text/plain', 'x-tabid': tabId } }, (response) => {
        response.resume();
        response.on('end', () => resolve({ status: response.statusCode ?? 0, setCookie: response.headers['set-cookie']?.[0] ?? '' }));
      });
      request.on('error', reject);
      request.end(`${front}/page`);
    });
    expect(first.status).toBe(200);
    expectSecureSessionCookie(first.setCookie);
    const qr = await qrRequest(tabId, first.setCookie.split(';')[0]!, 'text', { headers: { 'x-forwarded-host': 'evil.example', 'x-forwarded-proto': 'http' } });
    expect(qr.status).toBe(200);
    expect(qr.body.signUrl).toMatch(signUrlPattern());
  });

  it('the client address is the one nginx saw: a forged X-Forwarded-For does not escape the per-address limit', async () => {
    const tabId = randomUUID();
    const { cookie } = await firstPoll(tabId);
    // Two clients on two loopback addresses (the proxy sees 127.0.0.2 and 127.0.0.3; the node sees only nginx).
    const from = (localAddress: string) => new Agent({ localAddress, connect: { ca, lookup: toLoopback } });
    const [first, second] = [from('127.0.0.2'), from('127.0.0.3')];
    try {
      for (let i = 1; i <= QR_PER_ADDRESS; i++) {
        const ok = await qrRequest(tabId, cookie, 'text', { dispatcher: first, headers: { 'x-forwarded-for': `203.0.113.${i}` } });
        expect(ok.status).toBe(200);
      }
      const refused = await qrRequest(tabId, cookie, 'text', { dispatcher: first, headers: { 'x-forwarded-for': '198.51.100.7' } });
      expect([refused.status, refused.body.code]).toEqual([429, 'rate_limited']);
      // Counted per client, not per proxy: the other address still has its own allowance.
      const other = await qrRequest(tabId, cookie, 'text', { dispatcher: second });
      expect(other.status).toBe(200);
    } finally {
      await Promise.all([first.close(), second.close()]);
    }
  });

  it('in Chromium through the proxy, development approval off: the demo shows a code, the approval page says how to approve (no dead buttons), the result reaches the demo', async () => {
    // A public name, so development approval is off as on any real deployment (docs/signing.md).
    const browser = await launchChromium({ resolveToLoopback: [NAME] });
    try {
      const context = await browser.newContext({ ignoreHTTPSErrors: true });
      const errors: string[] = [];
      const demo = await context.newPage();
      demo.on('pageerror', (e) => errors.push(e.message));
      await demo.goto(`${front}/`);
      await demo.waitForSelector('#qr:not([hidden])');
      const signUrl = (await demo.getAttribute('#same-device', 'href'))!;
      expect(signUrl).toMatch(signUrlPattern());

      // "Approve on this device" without a wallet opens the approval page: it names the ways that work.
      const approval = await context.newPage();
      approval.on('pageerror', (e) => errors.push(e.message));
      await approval.goto(signUrl);
      await approval.waitForSelector('#how', { state: 'visible' });
      expect(await approval.isVisible('#approve')).toBe(false);
      expect(await approval.isVisible('#reject')).toBe(false);
      expect(await approval.textContent('#purpose')).toBe('Log in to the tabwire demo');
      expect(await approval.textContent('#cli-command')).toBe(`tabwire sign '${signUrl}' --key FILE`);
      await approval.click('#wallet-link');
      await approval.waitForURL(`${front}/wallet/#sign=${encodeURIComponent(signUrl)}`);
      await approval.waitForSelector('body[data-ready="1"]');

      // The code on screen may have been replaced since: approve the one shown now, as a phone would.
      const shown = (await demo.getAttribute('#same-device', 'href'))!;
      await approve(shown);
      await demo.waitForSelector('#result:not([hidden])');
      expect(await demo.textContent('#result')).toContain('Lovelace');
      expect(errors).toEqual([]);
    } finally {
      await browser.close();
    }
  });

  it('plain HTTP is redirected to https', async () => {
    const answer = await undiciFetch(`http://${NAME}:${httpPort}/Events.js?x=1`, { redirect: 'manual', dispatcher: agent });
    expect(answer.status).toBe(301);
    // $host has no port: behind the real port 443 this is the page's own https URL.
    expect(answer.headers.get('location')).toBe(`https://${NAME}/Events.js?x=1`);
  });
});
