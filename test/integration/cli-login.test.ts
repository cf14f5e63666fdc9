import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { WebSocketServer, type WebSocket } from 'ws';
import { writeKeyFile } from '../../src/identity/key-file.js';
import { generateEd25519 } from '../../src/identity/keys.js';
import type { QuickLoginResult } from '../../src/protocol/events.js';
import { ResultVerificationError, verifyResultSignature, type ResultKeyJwk } from '../../src/quicklogin/verify-result.js';
import { runCli, startCli } from '../helpers/cli.js';
import { decodeText } from '../helpers/qr-decode.js';
import { makeIdentity, startService, type TestService } from '../helpers/service.js';

// `tabwire login` and `tabwire sign` as two real processes (dist/) against a real service.
let service: TestService;
let keyFile: string;
let legalId: string;
const PURPOSE = 'Log in to the terminal test';

beforeAll(async () => {
  service = await startService();
  const { identity, privateKeyPem } = await makeIdentity(service, { FIRST: 'Ada', LAST: 'Lovelace', COUNTRY: 'GB' });
  legalId = identity.id;
  keyFile = join(service.dir, 'ada.key');
  writeKeyFile(keyFile, legalId, privateKeyPem);
});
afterAll(() => service.close());

const SIGN_URL = /^signUrl: (\S+)$/m;
const login = (...extra: string[]) => startCli(['login', '--service', service.baseUrl, '--purpose', PURPOSE, ...extra]);
const codeState = async (signUrl: string) => (await fetch(signUrl, { headers: { accept: 'application/json' } })).status;

// Two processes per case; the limit only bounds a broken run on a busy machine.
const SLOW = { timeout: 120_000 };

describe('tabwire login', SLOW, () => {
  it('prints the identity a second process signed with tabwire sign, verified against the published key', async () => {
    const tab = login('--filter', 'FIRST,COUNTRY');
    const signUrl = (await tab.waitFor(SIGN_URL))[1]!;
    // The QR code printed in the terminal is the signUrl printed under it.
    const qrText = tab.stderr.slice(0, tab.stderr.indexOf('signUrl:')).replace(/\n$/, '');
    expect(decodeText(qrText)).toBe(signUrl);

    const signed = await runCli(['sign', signUrl, '--key', keyFile, '--yes']);
    expect(signed.stdout).toContain(`http://127.0.0.1:${new URL(service.baseUrl).port} asks: "${PURPOSE}"`);
    expect(signed.stdout.trim().split('\n').pop()).toBe('approved');

    expect(await tab.exited).toBe(0);
    expect(tab.stdout).toContain(`Logged in: ${legalId} (Approved, provider legal.test)`);
    expect(tab.stdout).toMatch(/^ {2}FIRST +Ada$/m);
    expect(tab.stdout).toMatch(/^ {2}COUNTRY +GB$/m);
    expect(tab.stdout).not.toContain('Lovelace');
    expect(tab.stdout).toContain('ServerSignature verified with key');
  });

  it('--json prints the verified result; a tampered copy of it is refused by the verification', async () => {
    const tab = login('--json');
    const signUrl = (await tab.waitFor(SIGN_URL))[1]!;
    expect((await runCli(['sign', signUrl, '--key', keyFile, '--yes'])).status).toBe(0);
    expect(await tab.exited).toBe(0);
    const result = JSON.parse(tab.stdout) as QuickLoginResult;
    expect(result.Id).toBe(legalId);
    expect(result.Properties).toEqual({ FIRST: 'Ada', LAST: 'Lovelace', COUNTRY: 'GB' });

    const document = (await (await fetch(`${service.baseUrl}/.well-known/tabwire/result-keys`)).json()) as { keys: ResultKeyJwk[] };
    const { keys } = document;
    expect(verifyResultSignature(result, keys)).toBe(keys[0]!.kid);
    // The whole document as fetched works too (regression: "keys is not iterable").
    expect(verifyResultSignature(result, document)).toBe(keys[0]!.kid);
    expect(() => verifyResultSignature(result, {} as { keys: ResultKeyJwk[] })).toThrow(/the document \{"keys": \[\.\.\.\]\}/);
    const refused = (changed: unknown, with_ = keys) => expect(() => verifyResultSignature(changed, with_)).toThrow(ResultVerificationError);
    refused({ ...result, Properties: { ...result.Properties, FIRST: 'Eve' } });
    refused({ ...result, Id: 'eve@legal.test' });
    refused({ ...result, Extra: true });
    refused({ ...result, ServerSignature: Buffer.alloc(64).toString('base64') });
    refused({ ...result, ServerSignature: undefined });
    // Another key (a service that is not this one) does not verify it either.
    const other = generateEd25519();
    refused(result, [{ kty: 'OKP', crv: 'Ed25519', x: Buffer.from(other.publicKey, 'base64').toString('base64url'), kid: 'other' }]);
    refused(result, []);
  });

  it('exits 3 with a message when the person declines in tabwire sign (the decline is sent, not dropped)', async () => {
    const tab = login();
    const signUrl = (await tab.waitFor(SIGN_URL))[1]!;
    const declined = await runCli(['sign', signUrl, '--key', keyFile], { input: 'n\n' });
    expect(declined.status).toBe(0);
    expect(declined.stdout.trim().split('\n').pop()).toBe('rejected');
    expect(await tab.exited).toBe(3);
    expect(tab.stderr).toContain(`the login was rejected by ${legalId}`);
    expect(tab.stdout).toBe('');
  });

  it('replaces an expired code with a new one and logs in with that', async () => {
    const tab = login('--check-every', '1');
    const first = (await tab.waitFor(SIGN_URL))[1]!;
    service.clock.advance(301_000); // past codeValiditySeconds (300) on the service's clock
    await tab.waitFor(/The code expired; a new one:[\s\S]*signUrl: (\S+)/);
    const second = [...tab.stderr.matchAll(/^signUrl: (\S+)$/gm)].map((m) => m[1]!)[1]!;
    expect(second).not.toBe(first);
    expect(await codeState(first)).toBe(410);
    expect((await runCli(['sign', second, '--key', keyFile, '--yes'])).status).toBe(0);
    expect(await tab.exited).toBe(0);
    expect(tab.stdout).toContain(`Logged in: ${legalId}`);
  });

  it('exits 4 after --timeout without an answer', async () => {
    // The timeout covers the set-up as well, so on a busy machine it may end before the code is shown: same answer.
    const tab = login('--timeout', '1');
    expect(await tab.exited).toBe(4);
    expect(tab.stderr).toContain('no answer within 1 s');
  });

  it('names --origin when the service does not allow the origin sent', async () => {
    const { status, stderr } = await runCli(['login', '--service', service.baseUrl, '--origin', 'https://elsewhere.example', '--timeout', '30']);
    expect(status).toBe(1);
    expect(stderr).toContain('origin_not_allowed');
    expect(stderr).toContain('Pass --origin');
  });
});

describe('tabwire sign', SLOW, () => {
  it('exits 1 and signs nothing when stdin is closed and --yes is absent (regression: printed the prompt and exited 0)', async () => {
    const tab = login();
    const signUrl = (await tab.waitFor(SIGN_URL))[1]!;
    // </dev/null, and a pipe that ends without a line.
    for (const closed of [{ stdin: 'ignore' as const }, { input: '' }]) {
      const run = await runCli(['sign', signUrl, '--key', keyFile], closed);
      expect(run.status).toBe(1);
      expect(run.stderr).toContain('no answer: standard input closed before a decision. Nothing was signed.');
      expect(run.stderr).toContain('--yes');
    }
    expect(await codeState(signUrl)).toBe(200); // still pending: nothing was signed or rejected
    expect((await runCli(['sign', signUrl, '--key', keyFile], { input: 'y\n' })).stdout.trim().split('\n').pop()).toBe('approved');
    expect(await tab.exited).toBe(0);
  });

  it('explains a pasted placeholder or a malformed URL instead of a bare "Invalid URL"', async () => {
    for (const placeholder of ['<signUrl>', 'SIGN_URL', '$SIGN_URL', '<paste the signUrl printed above>', '{signUrl}']) {
      const { status, stderr } = await runCli(['sign', placeholder, '--key', keyFile]);
      expect(status, placeholder).toBe(2);
      expect(stderr, placeholder).toContain(`"${placeholder}" is a placeholder, not a signUrl: paste the signUrl`);
      expect(stderr, placeholder).not.toContain('Invalid URL');
    }
    const malformed = await runCli(['sign', 'http//127.0.0.1/QuickLogin/Sign/abc', '--key', keyFile]);
    expect(malformed.stderr).toContain('is not a URL: paste the signUrl');
    const otherUrl = await runCli(['sign', `${service.baseUrl}/`, '--key', keyFile]);
    expect(otherUrl.stderr).toContain('its path must end in /QuickLogin/Sign/<code>');
  });
});

describe('tabwire login against a stand-in service that sends a chosen result', SLOW, () => {
  let fake: Server;
  let fakeUrl: string;
  let served: unknown;
  /** Close the first socket (as a restarting service does) after the QR request, before the result. */
  let dropFirst = false;
  let keys: ResultKeyJwk[];
  let sockets: WebSocket[] = [];
  let registers: Array<{ frame: { tabId: string; lastEventId?: number }; cookie: string | undefined }> = [];

  // Just enough of the protocol (docs/events.md, docs/signing.md) to hand the CLI one chosen result.
  beforeAll(async () => {
    keys = ((await (await fetch(`${service.baseUrl}/.well-known/tabwire/result-keys`)).json()) as { keys: ResultKeyJwk[] }).keys;
    fake = createServer((request, response) => {
      const json = (body: unknown) => response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      if (request.url === '/.well-known/tabwire/result-keys') return json({ keys });
      if (request.method === 'POST' && request.url === '/QuickLogin') {
        json({ signUrl: `${fakeUrl}/QuickLogin/Sign/fakecode`, text: '\u2588' });
        const ws = sockets.at(-1)!;
        if (dropFirst && sockets.length === 1) {
          ws.send(JSON.stringify({ type: 'SomethingElse', data: null, id: 7 }));
          ws.close(1001, 'shutdown');
        } else ws.send(JSON.stringify({ type: 'SignatureReceived', data: served, id: 8 }));
        return;
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
    const wss = new WebSocketServer({ server: fake, path: '/ClientEventsWS' });
    // The session cookie comes with the first 101 (docs/events.md).
    wss.on('headers', (headers, request) => {
      if (!request.headers.cookie) headers.push('Set-Cookie: tabwire_sid=fake-session-cookie; Path=/; HttpOnly');
    });
    wss.on('connection', (ws, request) => {
      sockets.push(ws);
      ws.on('message', (data) => {
        const frame = JSON.parse(data.toString()) as { cmd: string; tabId: string; lastEventId?: number };
        if (frame.cmd !== 'Register') return;
        registers.push({ frame, cookie: request.headers.cookie });
        ws.send(JSON.stringify({ type: 'CheckServerInstance', data: 'fake' }));
        // After a reconnect, the result signed meanwhile arrives on the new Register.
        if (sockets.length === 2) ws.send(JSON.stringify({ type: 'SignatureReceived', data: served, id: 8 }));
      });
    });
    await new Promise<void>((resolve) => fake.listen(0, '127.0.0.1', resolve));
    fakeUrl = `http://127.0.0.1:${(fake.address() as { port: number }).port}`;
  });
  beforeEach(() => {
    sockets = [];
    registers = [];
    dropFirst = false;
  });
  afterAll(() => new Promise<void>((resolve) => fake.close(() => resolve())));

  async function genuineResult(): Promise<QuickLoginResult> {
    const tab = login('--json');
    const signUrl = (await tab.waitFor(SIGN_URL))[1]!;
    await runCli(['sign', signUrl, '--key', keyFile, '--yes']);
    expect(await tab.exited).toBe(0);
    return JSON.parse(tab.stdout) as QuickLoginResult;
  }
  const loginAtFake = (purpose = PURPOSE) => runCli(['login', '--service', fakeUrl, '--purpose', purpose, '--json', '--timeout', '60']);

  it('accepts the genuine result and refuses it with one property changed, or for another purpose', async () => {
    const genuine = await genuineResult();
    served = genuine;
    const accepted = await loginAtFake();
    expect(accepted.status).toBe(0);
    expect(JSON.parse(accepted.stdout)).toEqual(genuine);

    served = { ...genuine, Properties: { ...genuine.Properties, FIRST: 'Eve' } };
    const refused = await loginAtFake();
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain('refused the result: ServerSignature does not verify with any key the service publishes');
    expect(refused.stdout).toBe('');

    // Genuine, but signed for another request's purpose.
    served = genuine;
    const otherPurpose = await loginAtFake('Something else');
    expect(otherPurpose.status).toBe(1);
    expect(otherPurpose.stderr).toContain('refused the result: it was signed for another purpose');
  });

  it('reconnects after a lost channel with its session cookie, the same tab and lastEventId', async () => {
    served = await genuineResult();
    dropFirst = true;
    const run = await loginAtFake();
    expect(run.stderr).toContain('event channel lost (1001); reconnecting in 1 s');
    expect(run.status).toBe(0);
    expect(registers).toHaveLength(2);
    expect(registers[0]!.cookie).toBeUndefined();
    expect(registers[1]!.cookie).toBe('tabwire_sid=fake-session-cookie');
    expect(registers[1]!.frame.tabId).toBe(registers[0]!.frame.tabId);
    expect(registers[1]!.frame.lastEventId).toBe(7);
  });
});
